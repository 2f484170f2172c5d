// The wording docs/api.md ("Errors") gives a bounded number, worked out
// here from an OpenAPI schema's bounds and the field's name, so tests check
// the service's messages against the documents rather than against the code
// that writes them.

/** A number's schema as an OpenAPI document states it. */
export interface NumberSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

export type Unit = 'days' | 'hours';

/** The unit a field counts in, by its name: lookbackDays, expiryDays and days in days; validHours in hours. */
export const unitOf = (name: string): Unit | undefined =>
  name === 'days' || name.endsWith('Days') ? 'days' : name === 'hours' || name.endsWith('Hours') ? 'hours' : undefined;

// A unit's smaller units, as a number of it.
const SMALLER: Record<Unit, [number, string][]> = {
  days: [
    [24, 'hour'],
    [1440, 'minute'],
    [86_400, 'second'],
  ],
  hours: [
    [60, 'minute'],
    [3600, 'second'],
  ],
};

/** A bound in its unit: a fraction of a day that is a whole number of minutes is "m/1440 (m minutes)". */
function bound(v: number, unit: Unit | undefined): string {
  if (!unit || Number.isInteger(v) || Math.abs(v) >= 1) return String(v);
  for (const [per, noun] of SMALLER[unit]) {
    const count = Math.round(v * per);
    if (Math.abs(v * per - count) < 1e-9 * per) return `${count}/${per} (${count} ${noun}${count === 1 ? '' : 's'})`;
  }
  return String(v);
}

/**
 * What a bounded number field is, from its schema: `words` ("an integer
 * between 1 and 500", "a whole number of days between 20 and 504", "a number
 * greater than 0 and at most 5", "an integer of at least 0"), `rule` ("must
 * be " and the words), and the bounds as integers where the field takes integers.
 */
export function numberWords(s: NumberSchema, field: string) {
  const lower = s.exclusiveMinimum !== undefined ? { v: s.exclusiveMinimum, incl: false } : s.minimum !== undefined ? { v: s.minimum, incl: true } : null;
  const upper = s.exclusiveMaximum !== undefined ? { v: s.exclusiveMaximum, incl: false } : s.maximum !== undefined ? { v: s.maximum, incl: true } : null;
  const integer = s.type === 'integer';
  const unit = unitOf(field);
  // An integer's exclusive bound is the next integer inside it.
  const lo = lower && integer && !lower.incl ? { v: Math.floor(lower.v) + 1, incl: true } : lower;
  const hi = upper && integer && !upper.incl ? { v: Math.ceil(upper.v) - 1, incl: true } : upper;
  const range =
    lo && hi && lo.incl && hi.incl
      ? `between ${bound(lo.v, unit)} and ${bound(hi.v, unit)}`
      : [lo && `${lo.incl ? 'at least' : 'greater than'} ${bound(lo.v, unit)}`, hi && `${hi.incl ? 'at most' : 'less than'} ${bound(hi.v, unit)}`]
          .filter(Boolean)
          .join(' and ');
  const kind = unit ? `${integer ? 'a whole number' : 'a number'} of ${unit}` : integer ? 'an integer' : 'a number';
  const joint = /^at (least|most)/.test(range) ? (unit ? ', ' : ' of ') : ' ';
  const words = `${kind}${joint}${range}`;
  return { words, rule: `must be ${words}`, lo, hi, integer, unit };
}

/** "received 505 days": a number received, as sent, in the field's unit (a fraction of a unit is also told in a smaller one, after this). */
export const receivedNumber = (v: number | string, unit: Unit | undefined) => `received ${v}${unit ? ` ${unit}` : ''}`;
