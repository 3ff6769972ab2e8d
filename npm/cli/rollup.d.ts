// Types of @precompress/cli/rollup as CommonJS (require): the function is
// module.exports, with .default and .precompress the same function.
import type { PluginOptions as Options, PrecompressRollupPlugin as Plugin } from './plugin-types.js';

declare function precompress(options?: Options): Plugin;
declare namespace precompress {
  export type PluginOptions = Options;
  export type PrecompressRollupPlugin = Plugin;
  export const precompress: (options?: Options) => Plugin;
  export { precompress as default };
}
export = precompress;
