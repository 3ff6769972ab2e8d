// Types of @precompress/cli as an ES module (import): index.d.ts's, and the
// default export is precompress().
import { precompress } from './index.js';

export * from './index.js';
export default precompress;
