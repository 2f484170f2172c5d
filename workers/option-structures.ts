/**
 * The option structures of the strategy-EV request, each with a leg-shape
 * check. Runs on the request thread, before any task is queued, so a
 * malformed structure is refused without a worker; it imports nothing but
 * types.
 */
import { STRUCTURE_NAMES, type StructureName, type OptionLeg, type LegAction, type OptionType } from './contract.ts';

function isStructureName(name: string): name is StructureName {
  return (STRUCTURE_NAMES as readonly string[]).includes(name);
}

interface StructureSpec {
  name: StructureName;
  /** Human-readable shape, e.g. "buy put K1, sell put K2, sell call K3, buy call K4; K1 < K2 < K3 < K4; equal quantities". */
  shape: string;
  /** Problems with the legs for this structure; empty when they match. `custom` accepts any option legs. */
  check: (legs: readonly OptionLeg[]) => string[];
}

interface Slot {
  action: LegAction;
  type: OptionType;
  /** Strike label, e.g. 'K1'; equal labels must have equal strikes. */
  k: string;
  /** Quantity as a multiple of the first slot's quantity. */
  ratio: number;
}

const eqTol = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

function describeLeg(l: { action: string; type: string; strike: number; quantity: number }): string {
  return `${l.action} ${l.quantity} ${l.type} ${l.strike}`;
}

/** Merges legs with the same action, type and strike (quantities add). */
function aggregate(legs: readonly OptionLeg[]): OptionLeg[] {
  const out: OptionLeg[] = [];
  for (const leg of legs) {
    const same = out.find((o) => o.action === leg.action && o.type === leg.type && eqTol(o.strike, leg.strike));
    if (same) same.quantity += leg.quantity;
    else out.push({ action: leg.action, type: leg.type, strike: leg.strike, quantity: leg.quantity });
  }
  return out;
}

/**
 * Matches legs against slots (listed in ascending strike order). Slots that
 * share action and type take the matching legs in ascending strike order.
 * `order` lists strike labels that must be strictly increasing.
 */
function matchShape(name: string, shape: string, slots: Slot[], order: string[], extra?: (k: Record<string, number>) => string[]) {
  return (rawLegs: readonly OptionLeg[]): string[] => {
    const legs = aggregate(rawLegs);
    const problems: string[] = [];
    const wanted = slots.map((s) => `${s.action} ${s.type}`);
    if (legs.length !== slots.length) {
      problems.push(
        `${name} needs ${slots.length} distinct leg${slots.length > 1 ? 's' : ''} (${shape}); got ${legs.length}: ${legs.map(describeLeg).join(', ') || 'none'}`,
      );
      return problems;
    }
    const assigned: OptionLeg[] = new Array(slots.length);
    const groups = new Map<string, number[]>();
    slots.forEach((s, i) => {
      const key = `${s.action} ${s.type}`;
      groups.set(key, [...(groups.get(key) ?? []), i]);
    });
    for (const [key, idxs] of groups) {
      const cands = legs.filter((l) => `${l.action} ${l.type}` === key).sort((a, b) => a.strike - b.strike);
      if (cands.length !== idxs.length) {
        problems.push(`${name} needs ${idxs.length} × "${key}" leg${idxs.length > 1 ? 's' : ''}; got ${cands.length}`);
        continue;
      }
      idxs.forEach((slotIdx, j) => (assigned[slotIdx] = cands[j]));
    }
    if (problems.length) {
      const extraLegs = legs.filter((l) => !wanted.includes(`${l.action} ${l.type}`));
      if (extraLegs.length) problems.push(`${name} has no place for: ${extraLegs.map(describeLeg).join(', ')}`);
      problems.push(`expected shape: ${shape}`);
      return problems;
    }
    const k: Record<string, number> = {};
    slots.forEach((s, i) => {
      const strike = assigned[i].strike;
      if (s.k in k) {
        if (!eqTol(k[s.k], strike))
          problems.push(`${name}: the ${s.action} ${s.type} and the other ${s.k} leg must share one strike; got ${k[s.k]} and ${strike}`);
      } else k[s.k] = strike;
    });
    for (let i = 0; i + 1 < order.length; i += 1) {
      const a = order[i];
      const b = order[i + 1];
      if (a in k && b in k && !(k[a] < k[b])) problems.push(`${name}: strikes must satisfy ${order.join(' < ')}; got ${a} = ${k[a]}, ${b} = ${k[b]}`);
    }
    const base = assigned[0].quantity;
    slots.forEach((s, i) => {
      const want = s.ratio * base;
      if (!eqTol(assigned[i].quantity, want)) {
        problems.push(
          `${name}: the ${s.action} ${s.type} ${assigned[i].strike} quantity must be ${s.ratio === 1 ? 'equal to the others' : `${s.ratio} × the wing quantity`} (${want}); got ${assigned[i].quantity}`,
        );
      }
    });
    if (!problems.length && extra) problems.push(...extra(k));
    return problems;
  };
}

function single(name: StructureName, action: LegAction, type: OptionType): StructureSpec {
  const shape = `${action} ${type}`;
  return { name, shape, check: matchShape(name, shape, [{ action, type, k: 'K', ratio: 1 }], []) };
}

function spec(name: StructureName, shape: string, slots: Slot[], order: string[], extra?: (k: Record<string, number>) => string[]): StructureSpec {
  return { name, shape, check: matchShape(name, shape, slots, order, extra) };
}

const butterflyShape = 'buy 1 K1, sell 2 K2, buy 1 K3, all calls or all puts; K1 < K2 < K3; K2 − K1 = K3 − K2';
function butterflyCheck(legs: readonly OptionLeg[]): string[] {
  const types = new Set(legs.map((l) => l.type));
  if (types.size !== 1) return [`butterfly legs must be all calls or all puts; got ${legs.map(describeLeg).join(', ')}`, `expected shape: ${butterflyShape}`];
  const type = legs[0].type;
  return matchShape(
    'butterfly',
    butterflyShape,
    [
      { action: 'buy', type, k: 'K1', ratio: 1 },
      { action: 'sell', type, k: 'K2', ratio: 2 },
      { action: 'buy', type, k: 'K3', ratio: 1 },
    ],
    ['K1', 'K2', 'K3'],
    (k) =>
      eqTol(k.K2 - k.K1, k.K3 - k.K2)
        ? []
        : [`butterfly wings must be equally spaced (K2 − K1 = K3 − K2); got ${k.K2 - k.K1} and ${k.K3 - k.K2} — use custom for a broken-wing butterfly`],
  )(legs);
}

/**
 * The 16 structure names of CONTRACT §3 with a leg-shape checker each.
 * Leg order does not matter; legs with the same action, type and strike are
 * merged first. Quantities must be in the stated ratios (equal unless stated).
 * Only the conventional orientation is accepted for the multi-leg names
 * (iron_condor and iron_butterfly are the short/credit versions, butterfly the
 * long/debit version); anything else is `custom`.
 */
export const STRUCTURES: Readonly<Record<StructureName, StructureSpec>> = {
  long_call: single('long_call', 'buy', 'call'),
  long_put: single('long_put', 'buy', 'put'),
  short_call: single('short_call', 'sell', 'call'),
  short_put: single('short_put', 'sell', 'put'),
  bull_call_spread: spec(
    'bull_call_spread',
    'buy call K1, sell call K2; K1 < K2; equal quantities',
    [
      { action: 'buy', type: 'call', k: 'K1', ratio: 1 },
      { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  bear_put_spread: spec(
    'bear_put_spread',
    'sell put K1, buy put K2; K1 < K2; equal quantities',
    [
      { action: 'sell', type: 'put', k: 'K1', ratio: 1 },
      { action: 'buy', type: 'put', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  bull_put_spread: spec(
    'bull_put_spread',
    'buy put K1, sell put K2; K1 < K2; equal quantities',
    [
      { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
      { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  bear_call_spread: spec(
    'bear_call_spread',
    'sell call K1, buy call K2; K1 < K2; equal quantities',
    [
      { action: 'sell', type: 'call', k: 'K1', ratio: 1 },
      { action: 'buy', type: 'call', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  long_straddle: spec(
    'long_straddle',
    'buy put K, buy call K (same strike); equal quantities',
    [
      { action: 'buy', type: 'put', k: 'K', ratio: 1 },
      { action: 'buy', type: 'call', k: 'K', ratio: 1 },
    ],
    [],
  ),
  short_straddle: spec(
    'short_straddle',
    'sell put K, sell call K (same strike); equal quantities',
    [
      { action: 'sell', type: 'put', k: 'K', ratio: 1 },
      { action: 'sell', type: 'call', k: 'K', ratio: 1 },
    ],
    [],
  ),
  long_strangle: spec(
    'long_strangle',
    'buy put K1, buy call K2; K1 < K2; equal quantities',
    [
      { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
      { action: 'buy', type: 'call', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  short_strangle: spec(
    'short_strangle',
    'sell put K1, sell call K2; K1 < K2; equal quantities',
    [
      { action: 'sell', type: 'put', k: 'K1', ratio: 1 },
      { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
    ],
    ['K1', 'K2'],
  ),
  iron_condor: spec(
    'iron_condor',
    'buy put K1, sell put K2, sell call K3, buy call K4; K1 < K2 < K3 < K4; equal quantities',
    [
      { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
      { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
      { action: 'sell', type: 'call', k: 'K3', ratio: 1 },
      { action: 'buy', type: 'call', k: 'K4', ratio: 1 },
    ],
    ['K1', 'K2', 'K3', 'K4'],
  ),
  iron_butterfly: spec(
    'iron_butterfly',
    'buy put K1, sell put K2, sell call K2, buy call K3; K1 < K2 < K3; equal quantities',
    [
      { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
      { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
      { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
      { action: 'buy', type: 'call', k: 'K3', ratio: 1 },
    ],
    ['K1', 'K2', 'K3'],
  ),
  butterfly: { name: 'butterfly', shape: butterflyShape, check: butterflyCheck },
  custom: { name: 'custom', shape: 'any number of call/put legs on one expiry', check: () => [] },
};

/** Problems for a structure name and its legs; an unknown name is itself a problem. */
export function checkStructure(name: string, legs: readonly OptionLeg[]): string[] {
  if (!isStructureName(name)) return [`unknown structure "${name}"; expected one of ${STRUCTURE_NAMES.join(', ')}`];
  return STRUCTURES[name].check(legs);
}
