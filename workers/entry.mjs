// Worker-thread bootstrap: worker threads do not inherit the parent's tsx
// loader on Node 20, so each thread registers it before loading the tasks.
import { register } from 'tsx/esm/api';

register();
const tasks = await import('./tasks.ts');

export const dispatch = tasks.dispatch;
