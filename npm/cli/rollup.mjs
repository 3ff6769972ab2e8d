// ESM entry of the Rollup plugin (rollup.js).
import plugin from './rollup.js';

export default plugin;
export const precompress = plugin;
