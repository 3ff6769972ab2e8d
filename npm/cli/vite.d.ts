// Types of @precompress/cli/vite as CommonJS (require): the function is
// module.exports, with .default and .precompress the same function.
import type { PluginOptions as Options, PrecompressVitePlugin as Plugin } from './plugin-types.js';

declare function precompress(options?: Options): Plugin;
declare namespace precompress {
  export type PluginOptions = Options;
  export type PrecompressVitePlugin = Plugin;
  export const precompress: (options?: Options) => Plugin;
  export { precompress as default };
}
export = precompress;
