'use strict';
// What the Vite and Rollup plugins share: their options (named as the
// plugins users move from name them), one run of the program over an output
// directory once its files are on disk, the size table, and the previous
// build kept for deltas.

const fs = require('fs');
const path = require('path');
const { precompress } = require('../index.js');
const { formats: parseFormats, OptionError } = require('./args.js');

const UNSUPPORTED = {
  deleteOriginalAssets:
    'not supported: servers need the original beside its outputs (Caddy\'s precompressed, nginx ' +
    'gzip_static/brotli_static without "gzip_static always", whitenoise), and the originals are ' +
    'the next release\'s dictionaries for deltas',
  ext: 'not supported: outputs are named FILE.gz, FILE.br and FILE.zst, as servers look for them',
  filename: 'not supported: outputs are named FILE.gz, FILE.br and FILE.zst, as servers look for them',
  compressionOptions: 'not supported: use levels: { gzip, brotli, zstd }',
};
UNSUPPORTED.deleteOriginFile = UNSUPPORTED.deleteOriginalAssets;

// Keys passed to the program as they are (lib/args.js checks them).
const PASSED = ['maxRatio', 'jobs', 'memoryLimit', 'skipExt', 'gzipEngine', 'dictionaryName', 'cacheMaxSize', 'args', 'binary'];
const KNOWN = new Set([...PASSED, 'include', 'exclude', 'filter', 'threshold', 'minSize', 'formats',
  'algorithms', 'algorithm', 'levels', 'deltas', 'cacheDir', 'verbose', 'disable']);

function isMatcher(v) {
  return v instanceof RegExp || typeof v === 'function';
}

function matchers(name, value) {
  if (value === undefined || value === null) return { globs: [], tests: [] };
  const items = Array.isArray(value) ? value : [value];
  const globs = [];
  const tests = [];
  for (const v of items) {
    if (typeof v === 'string' && v !== '') globs.push(v);
    else if (v instanceof RegExp) tests.push((p) => { v.lastIndex = 0; return v.test(p); });
    else if (typeof v === 'function') tests.push(v);
    else throw new OptionError(`precompress: option ${name}: ${String(v)} is not a glob, a RegExp or a function`);
  }
  return { globs, tests };
}

// An error as a build tool should print it: its message, one line that
// names the program or the option, and no stack of this package's frames
// (Vite 8 prints the whole object); what it carries (exitCode, stderr,
// summary) kept but not shown.
function oneLine(e) {
  const err = new Error(e.message);
  err.stack = e.message;
  for (const k of ['code', 'exitCode', 'signal', 'stderr', 'summary']) {
    if (e[k] !== undefined) Object.defineProperty(err, k, { value: e[k], enumerable: false, writable: true, configurable: true });
  }
  return err;
}

// Checks every option now (a plugin made with a bad one fails the config's
// load with one line) and returns the plugin's settings.
function normalize(user = {}, plugin = false) {
  if (plugin) {
    try {
      return normalize(user);
    } catch (e) {
      throw oneLine(e);
    }
  }
  if (user === null || typeof user !== 'object') throw new OptionError('precompress: the plugin takes an options object');
  for (const k of Object.keys(user)) {
    if (UNSUPPORTED[k] && user[k] !== undefined && user[k] !== false) throw new OptionError(`precompress: option ${k}: ${UNSUPPORTED[k]}`);
    if (!KNOWN.has(k) && !UNSUPPORTED[k]) {
      throw new OptionError(`precompress: unknown option ${k} (known: ${[...KNOWN].sort().join(', ')})`);
    }
  }
  const o = { pass: {} };
  for (const k of PASSED) if (user[k] !== undefined) o.pass[k] = user[k];
  const fmts = user.formats ?? user.algorithms ?? user.algorithm;
  const fmtName = user.formats !== undefined ? 'formats' : user.algorithms !== undefined ? 'algorithms' : 'algorithm';
  if (fmts !== undefined) o.pass.formats = parseFormats(fmts, fmtName);
  if (user.levels !== undefined) o.pass.levels = user.levels;
  if (user.threshold !== undefined && user.minSize !== undefined && user.threshold !== user.minSize) {
    throw new OptionError('precompress: options threshold and minSize are one option: give one');
  }
  const min = user.threshold ?? user.minSize;
  if (min !== undefined) o.pass.minSize = min;
  const inc = matchers('include', user.include ?? user.filter);
  const exc = matchers('exclude', user.exclude);
  if (inc.globs.length) o.pass.include = inc.globs;
  if (exc.globs.length) o.pass.exclude = exc.globs;
  o.includeTests = inc.tests;
  o.excludeTests = exc.tests;
  if (user.deltas !== undefined && typeof user.deltas !== 'boolean' && (typeof user.deltas !== 'string' || user.deltas === '')) {
    throw new OptionError('precompress: option deltas: true, false or a directory');
  }
  o.deltas = user.deltas || false;
  if (user.cacheDir !== undefined && user.cacheDir !== false && (typeof user.cacheDir !== 'string' || user.cacheDir === '')) {
    throw new OptionError('precompress: option cacheDir: a directory, or false');
  }
  o.cacheDir = user.cacheDir;
  o.verbose = user.verbose ?? true;
  o.disable = user.disable ?? false;
  if (typeof o.verbose !== 'boolean' || typeof o.disable !== 'boolean') {
    throw new OptionError('precompress: options verbose and disable: true or false');
  }
  // The program checks the rest (types here, ranges there): fail now, not
  // after a build.
  require('./args.js').toArgs(o.pass);
  return o;
}

function isOutput(name, names) {
  const m = /^(.*)\.(gz|br|zst)$/.exec(name) || /^(.*)\.[0-9a-f]{16}\.dc[bz]$/.exec(name);
  return m !== null && names.has(m[1]);
}

// Files below dir (relative, '/'-separated) that are not outputs.
function walk(dir) {
  const out = [];
  const step = (rel) => {
    const entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
    const names = new Set(entries.map((e) => e.name));
    for (const e of entries) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) step(p);
      else if (!isOutput(e.name, names)) out.push(p);
    }
  };
  step('');
  return out;
}

function kB(n) {
  return `${(n / 1000).toFixed(2)} kB`;
}

const SHOWN = { gz: 'gz', br: 'br', zst: 'zst', dcb: 'dcb', dcz: 'dcz' };

// The size table (Vite's own shape: path, size, then each output) and a
// summary line, through the host's logger.
function report(log, label, records, summary, verbose) {
  const rows = [];
  for (const r of records) {
    const outs = Object.entries(r.outputs || {}).filter(([, o]) => o.state === 'kept');
    for (const d of r.deltas || []) if (d.state === 'kept') outs.push([d.format || 'delta', d]);
    if (outs.length) rows.push([r.path, r.size, outs]);
  }
  rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (verbose) {
    const w = Math.max(0, ...rows.map((r) => r[0].length));
    const sw = Math.max(0, ...rows.map((r) => kB(r[1]).length));
    for (const [p, s, outs] of rows) {
      const cols = outs.map(([f, o]) => `${SHOWN[f] || f}: ${kB(o.size).padStart(sw)}`);
      log(`${label}${p.padEnd(w)}  ${kB(s).padStart(sw)} │ ${cols.join(' │ ')}`);
    }
  }
  const f = summary.formats || {};
  const parts = Object.entries(f).map(([k, v]) => `${k} ${kB(v.bytes_out)} (${v.files})`);
  for (const [k, v] of Object.entries(summary.deltas || {})) if (v.files) parts.push(`${k} ${kB(v.bytes_out)} (${v.files})`);
  const cached = summary.cached ? `, ${summary.cached} from the cache` : '';
  log(`precompress: ${summary.compressed} of ${summary.files} files in ${label || './'}: ${parts.join(', ')}${cached}, ${summary.wall_s.toFixed(2)} s`);
}

// Keeps the tree just compressed at prev for the next build's deltas: its
// files only (no outputs), hard-linked when the next build will unlink them
// (Vite empties outDir) so that nothing is copied, else copied; put in place
// whole by a rename, so an interrupted build leaves the last good copy.
function keep(dir, rels, prev, link) {
  const tmp = `${prev}.new-${process.pid}`;
  const old = `${prev}.old-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  for (const rel of rels) {
    const from = path.join(dir, rel);
    const to = path.join(tmp, rel);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    let linked = false;
    if (link) {
      try {
        fs.linkSync(from, to);
        linked = true;
      } catch (e) {
        // another file system, or links refused: a copy
      }
    }
    if (!linked) {
      try {
        fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE);
      } catch (e) {
        if (e.code !== 'ENOENT') throw e;
      }
    }
  }
  fs.mkdirSync(path.dirname(prev), { recursive: true });
  let had = false;
  try {
    fs.renameSync(prev, old);
    had = true;
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  fs.renameSync(tmp, prev);
  if (had) fs.rmSync(old, { recursive: true, force: true });
}

// One run over dir. host: { root, name (for the deltas' directory), log,
// warn, files (only these, relative to dir), unlinked (the host removes
// dir's files before its next build) }. Resolves with the summary;
// rejects with an Error whose message is one line.
async function compressDir(dir, o, host) {
  if (!fs.existsSync(dir)) return null;
  const options = { ...o.pass };
  const cacheRoot = path.join(host.root, 'node_modules', '.cache', 'precompress');
  const cacheDir = o.cacheDir === false ? false : o.cacheDir ? path.resolve(host.root, o.cacheDir) : cacheRoot;
  if (cacheDir) {
    fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    options.cacheDir = cacheDir;
  }
  let prev = null;
  if (o.deltas) {
    prev = typeof o.deltas === 'string' ? path.resolve(host.root, o.deltas) : path.join(cacheRoot, `prev-${host.name}`);
    if (fs.existsSync(prev)) options.dictionaryFrom = prev;
    else host.info(`precompress: no earlier build in ${path.relative(host.root, prev) || prev} yet: deltas from the next build on`);
  }
  let list = host.files || null;
  if (o.includeTests.length || o.excludeTests.length) {
    list = (list || walk(dir)).filter((p) => (!o.includeTests.length || o.includeTests.some((t) => t(p))) && !o.excludeTests.some((t) => t(p)));
  }
  if (list) options.filesFrom = list;
  if (list && list.length === 0) return null;

  const attempt = async (opts) => {
    const records = [];
    const stderr = [];
    const summary = await precompress(dir, {
      ...opts,
      onFile: (r) => records.push(r),
      onStderr: (l) => stderr.push(l),
    });
    return { records, summary, stderr };
  };
  let result;
  try {
    result = await attempt(options);
  } catch (e) {
    // A cache the program refuses (a world-writable node_modules, as under
    // GitLab's umask 0000) costs the cache, not the build.
    const refused = e.exitCode === 2 && cacheDir && (e.stderr || []).some((l) => l.startsWith(`precompress: ${cacheDir}:`));
    if (!refused) throw e;
    host.warn(`${(e.stderr || []).find((l) => l.startsWith(`precompress: ${cacheDir}:`))}; compressing without the cache`);
    const { cacheDir: _, ...rest } = options;
    result = await attempt(rest);
  }
  for (const l of result.stderr) if (/: warning: /.test(l)) host.warn(l);
  const label = path.relative(process.cwd(), dir) || '.';
  report(host.log, `${label}/`, result.records, result.summary, o.verbose);
  if (prev) keep(dir, result.records.map((r) => r.path), prev, host.unlinked);
  return result.summary;
}

module.exports = { normalize, compressDir, walk, report, keep, oneLine };
