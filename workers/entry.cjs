// Worker-thread bootstrap. CommonJS on purpose: piscina require()s its worker
// file before it tries import(), and an ES module here goes through
// require(esm), which aborted the whole process on Node 20 (V8 FATAL
// "IsGraphAsync must be used on an instantiated module", seen in a CI run); a
// CommonJS file never takes that path. Node strips the task modules' types
// itself, so each thread loads them as soon as it starts.
const tasks = import('./tasks.ts');

// A failed load is reported by every task that awaits it, not as an unhandled rejection at start.
tasks.catch(() => {});

exports.dispatch = async (message) => (await tasks).dispatch(message);
