'use strict';
// The Rollup plugin: `import precompress from '@precompress/cli/rollup'`.
// After each output is written (writeBundle, last of all plugins), the
// program compresses that output's files in its directory, read from disk:
// the bytes every other plugin left there.

const path = require('path');
const { normalize, compressDir, oneLine } = require('./lib/plugin.js');

function precompressRollup(userOptions = {}) {
  const o = normalize(userOptions, true);
  const log = (m) => process.stderr.write(m + '\n');
  return {
    name: 'precompress',
    writeBundle: {
      sequential: true,
      order: 'post',
      async handler(outputOptions, bundle) {
        if (o.disable) return;
        const dir = path.resolve(outputOptions.dir || path.dirname(outputOptions.file));
        const files = Object.keys(bundle).map((f) => f.split(path.sep).join('/'));
        try {
          await compressDir(dir, o, {
            root: process.cwd(),
            name: `rollup-${path.basename(dir)}`,
            files,
            unlinked: false,
            log,
            info: log,
            warn: (m) => this.warn(m),
          });
        } catch (e) {
          throw oneLine(e);
        }
      },
    },
  };
}

module.exports = precompressRollup;
module.exports.default = precompressRollup;
module.exports.precompress = precompressRollup;
