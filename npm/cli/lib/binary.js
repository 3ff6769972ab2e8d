'use strict';
// Where the program is: PRECOMPRESS_BINARY, else the platform package that
// npm (pnpm, yarn) installed beside this one as an optional dependency. No
// download, no install script: a package manager that runs none (pnpm 10 by
// default) installs a working program all the same.

const fs = require('fs');
const path = require('path');

const PACKAGES = {
  'linux-x64': '@precompress/cli-linux-x64',
  'linux-arm64': '@precompress/cli-linux-arm64',
};
const SOURCE = 'https://github.com/precompress/precompress#install';

class BinaryError extends Error {
  constructor(message) {
    super(message);
    this.name = 'BinaryError';
    this.code = 'PRECOMPRESS_NO_BINARY';
  }
}

function ownVersion() {
  return require('../package.json').version;
}

// The project's lock file and whether it lists this package as a dev
// dependency, for the repair command (the way turbo diagnoses npm/cli#4828).
function saveFlag(from) {
  let dir = from;
  for (let i = 0; i < 12; i++) {
    const pkg = path.join(dir, 'package.json');
    if (dir !== path.dirname(dir) && !dir.split(path.sep).includes('node_modules') && fs.existsSync(pkg)) {
      try {
        const json = JSON.parse(fs.readFileSync(pkg, 'utf8'));
        if (json.dependencies && json.dependencies['@precompress/cli']) return ' --save-prod';
        if (json.devDependencies && json.devDependencies['@precompress/cli']) return ' --save-dev';
      } catch (e) {
        // an unreadable package.json: no flag
      }
    }
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return ' --save-dev';
}

function unsupported(platform, arch) {
  const key = `${platform}-${arch}`;
  const what = platform === 'darwin' ? `macOS (${key})` : platform === 'win32' ? `Windows (${key})` : key;
  const elsewhere = platform === 'win32' ? 'WSL or Docker' : platform === 'darwin' ? 'Docker or a Linux machine' : 'Linux x64 or arm64, or Docker';
  return new BinaryError(
    `precompress: no package for ${what} yet (only linux-x64 and linux-arm64): build the program ` +
      `from source (${SOURCE}) and set PRECOMPRESS_BINARY to it, or run the build on ${elsewhere}`
  );
}

function missing(pkg) {
  const v = ownVersion();
  return new BinaryError(
    `precompress: ${pkg} is not installed (an optional dependency, left out by --omit=optional or by ` +
      `a lock file made on another platform: npm/cli#4828); repair: npm install @precompress/cli@${v}` +
      `${saveFlag(process.cwd())} --package-lock-only && npm install`
  );
}

// The program's path, or a BinaryError whose message is one line naming the
// platform and what to do.
function binaryPath(options = {}) {
  const env = options.env || process.env;
  if (options.binary) return options.binary;
  if (env.PRECOMPRESS_BINARY) return env.PRECOMPRESS_BINARY;
  const platform = options.platform || process.platform;
  const arch = options.arch || process.arch;
  const pkg = PACKAGES[`${platform}-${arch}`];
  if (!pkg) throw unsupported(platform, arch);
  try {
    return require.resolve(`${pkg}/bin/precompress`);
  } catch (e) {
    throw missing(pkg);
  }
}

// A one-line message for a program that could not be started.
function spawnFailure(bin, error, env = process.env) {
  const from = env.PRECOMPRESS_BINARY && env.PRECOMPRESS_BINARY === bin ? ' (PRECOMPRESS_BINARY)' : '';
  const why = {
    ENOENT: 'no such file',
    EACCES: 'permission denied (not executable?)',
    ENOEXEC: 'not a program for this machine',
  }[error.code] || error.message;
  return `precompress: cannot run ${bin}${from}: ${why}`;
}

module.exports = { binaryPath, spawnFailure, BinaryError, PACKAGES };
