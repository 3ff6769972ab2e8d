import type { PluginOptions } from './vite';

export type { PluginOptions };

/** A Rollup plugin: compresses each output's files once they are written. */
export interface PrecompressRollupPlugin {
  name: 'precompress';
  [hook: string]: unknown;
}

declare function precompress(options?: PluginOptions): PrecompressRollupPlugin;
export { precompress };
export default precompress;
