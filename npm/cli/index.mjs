// ESM entry: the same functions as index.js.
import api from './index.js';

export const { precompress, files, version, binaryPath, command, PrecompressError, OptionError, BinaryError } = api;
export default api.precompress;
