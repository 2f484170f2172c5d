import { z } from 'zod';
import { ENVIRONMENTS, SCOPES } from '../core/scopes.ts';
import { LoginSchema, PasswordSchema } from './service.ts';
import { USAGE_PERIODS } from './usage-page.ts';

// The dashboard's forms and query strings; its pages are declared in routes.ts.
// The forms are not strict: a field they do not name (the CSRF token, checked
// before the form is parsed; an accountId planted in the key form) is ignored.

export const SignInFormSchema = z.object({ login: LoginSchema, password: z.string().min(1, 'required').max(200), csrf: z.string() });

export const InvitationQuerySchema = z.object({ token: z.string().min(1).max(100) });

export const InvitationFormSchema = z.object({ token: z.string().min(1).max(100), password: PasswordSchema, confirm: z.string(), csrf: z.string() });

export const KeyFormSchema = z.object({
  name: z.string().trim().min(1, 'required').max(200),
  environment: z.enum(ENVIRONMENTS),
  // One checked box arrives as a string, several as an array.
  scopes: z
    .union([z.string(), z.array(z.string())])
    .transform((s) => (Array.isArray(s) ? s : [s]))
    .pipe(z.array(z.enum(SCOPES, { error: 'not a scope' })).min(1, 'choose at least one scope')),
});

export const UsageQuerySchema = z.strictObject({
  days: z.coerce
    .number()
    .refine((d) => (USAGE_PERIODS as readonly number[]).includes(d), `one of ${USAGE_PERIODS.join(', ')}`)
    .default(USAGE_PERIODS[0]),
});
