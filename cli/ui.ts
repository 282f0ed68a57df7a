/** Links into the Temporal Web UI. */
export function workflowUrl(uiBase: string, namespace: string, workflowId: string): string {
  return `${uiBase}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
