/**
 * A signed-in dashboard session (dashboard/service.ts resumeSession): what
 * the dashboard's pages read from `res.locals.session` once its session check
 * passed.
 */
export interface Session {
  accountId: string;
  accountName: string;
  /** The token every state-changing request of this session carries. */
  csrfToken: string;
}
