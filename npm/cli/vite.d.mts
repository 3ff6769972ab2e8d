// Types of @precompress/cli/vite as an ES module (import).
import type { PluginOptions, PrecompressVitePlugin } from './plugin-types.js';

export type { Matcher, PluginOptions, PrecompressVitePlugin } from './plugin-types.js';
declare function precompress(options?: PluginOptions): PrecompressVitePlugin;
export { precompress };
export default precompress;
