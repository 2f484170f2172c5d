// The part of npm jstat the tests use as a reference; the package ships no types.
declare module 'jstat' {
  export const jStat: { normal: { cdf(x: number, mean: number, sd: number): number } };
}
