// The part of npm jstat the service and the tests use (the package ships no
// types): Student's t for the source-lead verdict (workers/source-leads.ts),
// and the normal distribution as the tests' second reference.
declare module 'jstat' {
  export const jStat: {
    normal: { cdf(x: number, mean: number, sd: number): number };
    studentt: { cdf(x: number, degreesOfFreedom: number): number };
  };
}
