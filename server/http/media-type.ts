import type { RequestHandler } from 'express';
import { AppError } from '../core/errors.ts';

const UTF8 = new Set(['utf-8', 'utf8']);

/** The `charset` parameter of a Content-Type, lower-cased and unquoted; undefined when it names none. */
export function charsetOf(contentType: string | undefined): string | undefined {
  for (const parameter of (contentType ?? '').split(';').slice(1)) {
    const at = parameter.indexOf('=');
    if (at > 0 && parameter.slice(0, at).trim().toLowerCase() === 'charset') {
      return parameter
        .slice(at + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase();
    }
  }
  return undefined;
}

/** Refuses (415) a body whose Content-Type names a charset other than UTF-8 (`utf-8` or `utf8`, in any case): bodies are read as UTF-8. */
export function refuseUnlessUtf8(contentType: string | undefined): void {
  const charset = charsetOf(contentType);
  if (charset !== undefined && !UTF8.has(charset)) {
    throw new AppError('unsupported_media_type', 'send the body in UTF-8', { 'content-type': [`unsupported charset: ${charset}; send UTF-8`] });
  }
}

/**
 * In front of body-parser's JSON parser: a body labelled with a charset other
 * than UTF-8 is refused with 415, rather than decoded as that charset (a
 * UTF-16 label on UTF-8 bytes would read as garbage and answer 400). The
 * label `utf8`, which body-parser refuses as not `utf-*`, is read as UTF-8.
 */
export const requireUtf8Body: RequestHandler = (req, _res, next) => {
  const contentType = req.get('content-type');
  refuseUnlessUtf8(contentType);
  if (contentType !== undefined && charsetOf(contentType) === 'utf8')
    req.headers['content-type'] = contentType.replace(/charset\s*=\s*"?utf8"?/i, 'charset=utf-8');
  next();
};
