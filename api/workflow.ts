/** `settle/workflow`: workflow-side code, deterministic and safe inside Temporal's workflow sandbox. */
export * from '../workflows/definitions';
export { trajectoryWorkflow } from '../workflows/index';
