'use strict';
// The Vite plugin: `import precompress from '@precompress/cli/vite'`.
//
// It runs the program over outDir once the build has written it (closeBundle,
// last of all plugins), never on the bundle in memory: every final byte is
// compressed (public/ files, what other plugins wrote or rewrote in
// writeBundle), whatever the bundler (Rollup, Rolldown under Vite 8). Once per
// environment whose consumer is the browser (Vite 6+), once for Vite 5's
// client build (not `--ssr`), once per rebuild under `vite build --watch`.

const path = require('path');
const { normalize, compressDir, oneLine } = require('./lib/plugin.js');

function isClient(environment) {
  if (!environment || !environment.config) return true;
  return (environment.config.consumer || 'client') === 'client';
}

function precompressPlugin(userOptions = {}) {
  const o = normalize(userOptions, true);
  let config = null;
  // environment name -> the output directories written in this build
  const written = new Map();

  return {
    name: 'precompress',
    apply: 'build',
    enforce: 'post',
    applyToEnvironment(environment) {
      return isClient(environment);
    },
    configResolved(resolved) {
      config = resolved;
    },
    writeBundle: {
      sequential: true,
      order: 'post',
      handler(outputOptions) {
        const env = this.environment;
        const name = (env && env.name) || 'client';
        const dir = outputOptions.dir || (outputOptions.file ? path.dirname(outputOptions.file) : null);
        if (!dir) return;
        if (!written.has(name)) written.set(name, new Set());
        written.get(name).add(path.resolve(config ? config.root : process.cwd(), dir));
      },
    },
    closeBundle: {
      sequential: true,
      order: 'post',
      async handler(error) {
        const env = this.environment;
        const name = (env && env.name) || 'client';
        const dirs = written.get(name);
        written.delete(name);
        if (error || o.disable || !config) return;
        const envConfig = (env && env.config) || config;
        const debug = (msg) => {
          if (typeof this.debug === 'function') this.debug(msg);
          if (/(^|[\s,])(precompress|vite:\*|vite:precompress)($|[\s,])/.test(process.env.DEBUG || '')) {
            config.logger.info(`vite:precompress ${msg}`);
          }
        };
        if (!isClient(env) || (!env && config.build.ssr)) {
          debug(`not compressing the ${name} environment's output (not served to browsers)`);
          return;
        }
        if (envConfig.build.write === false) {
          debug('build.write is false: nothing on disk, nothing to compress');
          return;
        }
        if (!dirs || dirs.size === 0) {
          debug('no output directory was written');
          return;
        }
        const root = config.root;
        const outDir = path.resolve(root, envConfig.build.outDir);
        // Vite empties outDir before a build when it lies inside root (or
        // emptyOutDir says so): then the kept copy may share its files.
        const emptied = envConfig.build.emptyOutDir === true ||
          (envConfig.build.emptyOutDir == null && (outDir + path.sep).startsWith(root + path.sep));
        const logger = config.logger;
        for (const dir of dirs) {
          try {
            await compressDir(dir, o, {
              root,
              name,
              unlinked: emptied && dir === outDir,
              log: (m) => logger.info(m),
              info: (m) => logger.info(m),
              warn: (m) => logger.warn(m),
            });
          } catch (e) {
            throw oneLine(e);
          }
        }
      },
    },
  };
}

module.exports = precompressPlugin;
module.exports.default = precompressPlugin;
module.exports.precompress = precompressPlugin;
