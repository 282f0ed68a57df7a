/** The read-only WorkflowService methods `settle status` calls: what its protobuf subset is generated for. */
export const WORKFLOW_SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';

export const STATUS_METHODS = [
  'DescribeWorkflowExecution',
  'DescribeTaskQueue',
  'ListWorkflowExecutions',
  'QueryWorkflow',
  'GetWorkflowExecutionHistory',
] as const;

export type StatusMethod = (typeof STATUS_METHODS)[number];
