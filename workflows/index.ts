/** Entry point of the workflow bundle: every workflow a settle worker runs. */
export { trajectoryWorkflow } from './trajectory';
export { mcpSessionWorkflow } from './mcp-session';
