import { BAND_MIN_BARS } from './band-readings.ts';
import { type ConsensusTrend, type TrendDirection } from './contract.ts';
import { READING_MIN_BARS } from './indicator-readings.ts';
/**
 * The consensus trend of the technicals snapshot, voted by its readings.
 *
 * Votes v in {+1, 0, −1} with weights w: ema.trend, sma.trend, wma.trend,
 * macd.trend, ichimoku.signal (w = 1 each); RSI momentum (+1 if RSI >= 55,
 * −1 if <= 45, else 0; w = 1); vwap.signal (w = 0.5); dominant chart pattern
 * signal (w = its confidence); candlestick signal (w = 0.5·confidence). Null
 * components do not vote. S = Σw·v / Σw. direction = `bullish` if S >= 0.2,
 * `bearish` if S <= −0.2, else `neutral`; strength = |S| in [0, 1];
 * confidence = agreement · coverage, where agreement = weight of votes whose
 * sign equals the direction (0 for neutral) / Σw, and coverage = Σw / maximum
 * possible weight (8).
 *
 * A consensus needs at least 3 indicator votes (the patterns add weight but
 * do not count): one voice is not a consensus, and two that disagree only
 * cancel out. With fewer, every field is null, the reason
 * `insufficient_bars` when the window has fewer bars than the third
 * indicator to become available needs (TREND_MIN_BARS: VWAP's signal 2, RSI
 * 15, the EMA trend 20, so 20 with every field present), else
 * `too_few_votes` (closes only, no price movement, or a gap).
 */

/** RSI at or above this votes bullish in the consensus trend. */
const CONSENSUS_RSI_BULLISH = 55;
/** RSI at or below this votes bearish in the consensus trend. */
const CONSENSUS_RSI_BEARISH = 45;
/** Weighted vote S at or beyond ±this sets the consensus direction. */
const CONSENSUS_THRESHOLD = 0.2;
const CONSENSUS_WEIGHTS = {
  ema: 1,
  sma: 1,
  wma: 1,
  macd: 1,
  ichimoku: 1,
  rsi: 1,
  vwap: 0.5,
  /** multiplied by the dominant chart pattern's confidence */
  chartPattern: 1,
  /** multiplied by the candlestick confidence */
  candlestick: 0.5,
} as const;
const CONSENSUS_MAX_WEIGHT = Object.values(CONSENSUS_WEIGHTS).reduce((a, b) => a + b, 0);
/** Indicator votes (patterns excluded) a consensus needs. */
const TREND_MIN_VOTES = 3;
/** The indicators that vote, by the bars each needs before it can. */
const INDICATOR_VOTERS = {
  ema: READING_MIN_BARS.emaTrend,
  sma: READING_MIN_BARS.smaTrend,
  wma: READING_MIN_BARS.wmaTrend,
  macd: READING_MIN_BARS.macd,
  ichimoku: BAND_MIN_BARS.ichimoku,
  rsi: READING_MIN_BARS.rsi,
  vwap: BAND_MIN_BARS.vwapSignal,
} as const;
/** The fewest bars over which TREND_MIN_VOTES indicators can vote: 20. */
export const TREND_MIN_BARS = Object.values(INDICATOR_VOTERS).sort((a, b) => a - b)[TREND_MIN_VOTES - 1];

/** The parts of the readings that vote. */
interface TrendVoters {
  ema: { trend: string | null };
  sma: { trend: string | null };
  wma: { trend: string | null };
  macd: { trend: string | null };
  ichimoku: { signal: string | null };
  rsi: { value: number | null };
  vwap: { signal: string | null };
  chartPatterns: { dominantPattern: { signal: string; confidence: number } | null };
  candlestick: { signal: string | null; confidence: number | null };
}

interface Vote {
  name: string;
  v: number;
  w: number;
}

const label = (x: Vote) => `${x.name} ${x.v > 0 ? '+' : x.v < 0 ? '−' : '0'}`;

function consensus(votes: Vote[], bars: number): ConsensusTrend {
  const cast = votes.filter((x) => x.w > 0);
  const indicatorVotes = cast.filter((x) => x.name in INDICATOR_VOTERS);
  if (indicatorVotes.length < TREND_MIN_VOTES) {
    const voted = cast.length === 0 ? 'none voted' : `${cast.length} voted [${cast.map(label).join(', ')}]`;
    return {
      direction: null,
      strength: null,
      confidence: null,
      reason: bars < TREND_MIN_BARS ? 'insufficient_bars' : 'too_few_votes',
      description:
        `a consensus needs at least ${TREND_MIN_VOTES} indicator votes (patterns add weight but do not count), possible from ${TREND_MIN_BARS} bars with every field present; ` +
        `over ${bars} bar(s), ${voted}`,
    };
  }
  const W = cast.reduce((a, x) => a + x.w, 0);
  const S = cast.reduce((a, x) => a + x.w * x.v, 0) / W;
  const direction: TrendDirection = S >= CONSENSUS_THRESHOLD ? 'bullish' : S <= -CONSENSUS_THRESHOLD ? 'bearish' : 'neutral';
  const dir = direction === 'bullish' ? 1 : direction === 'bearish' ? -1 : 0;
  const agree = cast.filter((x) => Math.sign(x.v) === dir).reduce((a, x) => a + x.w, 0) / W;
  const coverage = Math.min(1, W / CONSENSUS_MAX_WEIGHT);
  return {
    direction,
    strength: Math.abs(S),
    confidence: agree * coverage,
    reason: null,
    description: `weighted vote ${S.toFixed(3)} over ${cast.length} indicator(s) [${cast.map(label).join(', ')}]: ${direction}; agreement ${(agree * 100).toFixed(0)}%, coverage ${(coverage * 100).toFixed(0)}%`,
  };
}

const signVote = (s: string | null | undefined): number | null =>
  s === 'bullish' || s === 'above' ? 1 : s === 'bearish' || s === 'below' ? -1 : s == null ? null : 0;

/** The consensus over the readings of `bars` bars. */
export function trendConsensus({ ema, sma, wma, macd, ichimoku, rsi, vwap, chartPatterns, candlestick }: TrendVoters, bars: number): ConsensusTrend {
  const votes: Vote[] = [];
  const push = (name: string, v: number | null, w: number) => {
    if (v !== null) votes.push({ name, v, w });
  };
  push('ema', signVote(ema.trend), CONSENSUS_WEIGHTS.ema);
  push('sma', signVote(sma.trend), CONSENSUS_WEIGHTS.sma);
  push('wma', signVote(wma.trend), CONSENSUS_WEIGHTS.wma);
  push('macd', signVote(macd.trend), CONSENSUS_WEIGHTS.macd);
  push('ichimoku', signVote(ichimoku.signal), CONSENSUS_WEIGHTS.ichimoku);
  if (rsi.value !== null) push('rsi', rsi.value >= CONSENSUS_RSI_BULLISH ? 1 : rsi.value <= CONSENSUS_RSI_BEARISH ? -1 : 0, CONSENSUS_WEIGHTS.rsi);
  push('vwap', signVote(vwap.signal), CONSENSUS_WEIGHTS.vwap);
  if (chartPatterns.dominantPattern) {
    push('chartPattern', signVote(chartPatterns.dominantPattern.signal), CONSENSUS_WEIGHTS.chartPattern * chartPatterns.dominantPattern.confidence);
  }
  if (candlestick.signal !== null && candlestick.confidence !== null && candlestick.confidence > 0) {
    push('candlestick', signVote(candlestick.signal), CONSENSUS_WEIGHTS.candlestick * candlestick.confidence);
  }
  return consensus(votes, bars);
}
