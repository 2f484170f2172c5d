/** The 13 scopes. Matching is exact: no wildcard, no prefix implication. */
export const SCOPES = [
  'instruments:read',
  'prices:read',
  'actions:read',
  'fx:read',
  'earnings:read',
  'options:read',
  'news:read',
  'sentiment:read',
  'events:read',
  'analytics:read',
  'correlations:read',
  'technicals:read',
  'macro:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export const ENVIRONMENTS = ['sandbox', 'live'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const KEY_PREFIX: Record<Environment, string> = { sandbox: 'pk_test_', live: 'pk_live_' };
