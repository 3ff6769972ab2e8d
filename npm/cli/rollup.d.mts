// Types of @precompress/cli/rollup as an ES module (import).
import type { PluginOptions, PrecompressRollupPlugin } from './plugin-types.js';

export type { Matcher, PluginOptions, PrecompressRollupPlugin } from './plugin-types.js';
declare function precompress(options?: PluginOptions): PrecompressRollupPlugin;
export { precompress };
export default precompress;
