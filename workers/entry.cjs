// Worker-thread bootstrap. CommonJS on purpose: piscina require()s its worker
// file before it tries import(), and an ES module here goes through Node 20's
// require(esm), which can abort the whole process (V8 FATAL "IsGraphAsync
// must be used on an instantiated module", seen in a CI run); a CommonJS file
// never takes that path. Worker threads do not inherit the parent's tsx
// loader on Node 20, so each thread registers it, then loads the TypeScript
// task modules as soon as it starts.
const tasks = import('tsx/esm/api').then(({ register }) => {
  register();
  return import('./tasks.ts');
});

// A failed load is reported by every task that awaits it, not as an unhandled rejection at start.
tasks.catch(() => {});

exports.dispatch = async (message) => (await tasks).dispatch(message);
