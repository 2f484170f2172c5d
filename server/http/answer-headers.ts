import type { RequestHandler } from 'express';

/**
 * Headers on every answer of both listeners: the pages (/docs, the
 * dashboard, their 404s), their scripts, styles and icons, and JSON alike.
 *
 * - nosniff: a browser runs or renders a body only as its declared type, so a
 *   JSON answer or an error that quotes a client's text is never taken for a
 *   script or a page.
 * - same-origin, not no-referrer: the pages' own requests keep their Referer,
 *   and nothing of a page's address reaches another site. Under no-referrer a
 *   browser sends `Origin: null` with a same-origin form post (Fetch,
 *   "serializing a request origin"), which the dashboard's CSRF check refuses.
 */
export const ANSWER_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
} as const;

export const answerHeaders: RequestHandler = (_req, res, next) => {
  res.set(ANSWER_HEADERS);
  next();
};
