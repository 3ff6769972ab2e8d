// ESM entry of the Vite plugin (vite.js).
import plugin from './vite.js';

export default plugin;
export const precompress = plugin;
