import { z } from 'zod';
import { AppError, zodDetails } from './errors.ts';

/** Parses one part of a request; every failing field is named in `details`. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, part: 'query' | 'params' | 'body' | 'row' = 'query'): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new AppError('invalid_request', `invalid ${part === 'params' ? 'path parameters' : part}`, zodDetails(result.error));
  }
  return result.data;
}
