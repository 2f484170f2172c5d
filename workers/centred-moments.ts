/** Means, and the centred sums of squares and cross-products, of two equal-length series. */
export interface CentredMoments {
  meanX: number;
  meanY: number;
  sxx: number;
  sxy: number;
  syy: number;
}

/**
 * Two passes, the means first and then the deviations from them: daily log
 * returns are small numbers around a smaller mean, and the one-pass
 * Σx² − n·x̄² form loses their digits to cancellation. The caller checks the lengths.
 */
export function centredMoments(x: ArrayLike<number>, y: ArrayLike<number>): CentredMoments {
  const n = x.length;
  let meanX = 0;
  let meanY = 0;
  for (let i = 0; i < n; i++) {
    meanX += x[i];
    meanY += y[i];
  }
  meanX /= n;
  meanY /= n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i] - meanX;
    const dy = y[i] - meanY;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  return { meanX, meanY, sxx, sxy, syy };
}
