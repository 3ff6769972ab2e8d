'use strict';
// The JavaScript API: the program run with --json-lines, its per-file
// records streamed (onFile, or an async iterator), its summary as a
// promise. No compression happens in Node: memory is the program's, bounded
// by --memory-limit, not this heap.

const { spawn } = require('child_process');
const readline = require('readline');
const { binaryPath, spawnFailure, BinaryError } = require('./lib/binary.js');
const { toArgs, OptionError } = require('./lib/args.js');

// The programs running for this process. A signal that would end Node
// (SIGINT, SIGTERM, SIGHUP with no listener of the host's) reaches them
// first, so that killing a build does not leave a program compressing on,
// orphaned; then this process dies of it as it would have.
const live = new Set();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const handlers = {};
for (const sig of SIGNALS) {
  handlers[sig] = () => {
    for (const c of live) {
      try {
        c.kill(sig);
      } catch (e) {
        // gone already
      }
    }
    if (process.listenerCount(sig) === 1) {
      for (const s of SIGNALS) process.removeListener(s, handlers[s]);
      process.kill(process.pid, sig);
    }
  };
}
function track(child) {
  if (live.size === 0) for (const s of SIGNALS) process.on(s, handlers[s]);
  live.add(child);
  child.on('close', () => {
    live.delete(child);
    if (live.size === 0) for (const s of SIGNALS) process.removeListener(s, handlers[s]);
  });
}

class PrecompressError extends Error {
  constructor(message, fields) {
    super(message);
    this.name = 'PrecompressError';
    Object.assign(this, fields);
  }
}

function paths(dirs) {
  const list = Array.isArray(dirs) ? dirs : [dirs];
  if (list.length === 0 || list.some((d) => typeof d !== 'string' || d === '')) {
    throw new OptionError('precompress: the first argument is not a path or an array of paths');
  }
  return list;
}

// The program's arguments and what goes to its standard input, for paths
// and options as precompress() takes them.
function command(dirs, options = {}) {
  const argv = ['--json-lines', '--progress', 'never', ...toArgs(options)];
  let input = null;
  const ff = options.filesFrom;
  if (ff !== undefined) {
    if (typeof ff === 'string') {
      argv.push('--files-from', ff);
    } else if (Array.isArray(ff) && ff.every((n) => typeof n === 'string' && n !== '' && !n.includes('\0'))) {
      // NUL-separated: any name, newlines included
      argv.push('--files-from', '-');
      input = ff.map((n) => n + '\0').join('');
    } else {
      throw new OptionError('precompress: option filesFrom: not a file name or an array of names');
    }
  }
  argv.push('--', ...paths(dirs));
  return { argv, input };
}

// Runs the program; calls onRecord(object) for each line of its standard
// output; resolves with the summary, or rejects with a PrecompressError
// holding its exit status, signal, standard error lines and summary.
function run(dirs, options, onRecord) {
  return new Promise((resolve, reject) => {
    let bin;
    let cmd;
    try {
      cmd = command(dirs, options);
      bin = binaryPath({ binary: options.binary, env: options.env });
    } catch (e) {
      reject(e);
      return;
    }
    if (options.signal && options.signal.aborted) {
      reject(new PrecompressError('precompress: aborted before it started', { code: 'ABORT_ERR', exitCode: null, signal: null, stderr: [] }));
      return;
    }
    const child = spawn(bin, cmd.argv, {
      cwd: options.cwd,
      env: options.env,
      stdio: [cmd.input === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    track(child);
    const stderr = [];
    let summary = null;
    let callbackError = null;
    let spawnError = null;
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      child.kill('SIGTERM');
    };
    if (options.signal) options.signal.addEventListener('abort', onAbort, { once: true });

    child.on('error', (e) => {
      spawnError = e;
    });
    if (cmd.input !== null) {
      child.stdin.on('error', () => {}); // the program's own message says why it stopped reading
      child.stdin.end(cmd.input);
    }
    const out = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
    out.on('line', (line) => {
      if (line === '') return;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch (e) {
        stderr.push(`precompress: unexpected output: ${line.slice(0, 200)}`);
        return;
      }
      if (rec.type === 'summary') {
        summary = rec;
        return;
      }
      if (callbackError) return;
      try {
        onRecord(rec);
      } catch (e) {
        // a throwing callback stops the run; the promise rejects with it
        callbackError = e;
        child.kill('SIGTERM');
      }
    });
    const err = readline.createInterface({ input: child.stderr, crlfDelay: Infinity });
    err.on('line', (line) => {
      stderr.push(line);
      if (options.onStderr) options.onStderr(line);
    });
    const outClosed = new Promise((r) => out.on('close', r));
    const errClosed = new Promise((r) => err.on('close', r));
    child.on('close', async (code, signal) => {
      await Promise.all([outClosed, errClosed]);
      if (options.signal) options.signal.removeEventListener('abort', onAbort);
      if (spawnError) {
        reject(new PrecompressError(spawnFailure(bin, spawnError, options.env || process.env), {
          code: spawnError.code, exitCode: null, signal: null, stderr, summary: null,
        }));
      } else if (callbackError) {
        reject(callbackError);
      } else if (code === 0 && summary) {
        resolve(summary);
      } else {
        const lines = stderr.filter((l) => l.startsWith('precompress:') && !/: warning: /.test(l));
        const why = aborted ? 'aborted' : signal ? `killed by ${signal}` : `exit status ${code}`;
        const first = lines[0] || stderr[0] || (code === 0 ? 'precompress: no summary on standard output' : `precompress: ${why}`);
        const more = lines.length > 1 ? ` (and ${lines.length - 1} more line${lines.length > 2 ? 's' : ''})` : '';
        reject(new PrecompressError(`${first}${more}`, {
          code: aborted ? 'ABORT_ERR' : 'PRECOMPRESS_FAILED', exitCode: code, signal, stderr, summary,
        }));
      }
    });
  });
}

// precompress(paths, options) -> Promise<summary>; options.onFile(record)
// for each file as it finishes.
function precompress(dirs, options = {}) {
  const onFile = options.onFile;
  if (onFile !== undefined && typeof onFile !== 'function') {
    return Promise.reject(new OptionError('precompress: option onFile: not a function'));
  }
  return run(dirs, options, onFile || (() => {}));
}

// files(paths, options): an async iterator of the per-file records; its
// `summary` is a promise of the summary (it rejects as precompress() does).
// Leaving the loop early stops the program (SIGTERM).
function files(dirs, options = {}) {
  const queue = [];
  let wake = null;
  let done = false;
  let failure = null;
  const controller = new AbortController();
  if (options.signal) {
    if (options.signal.aborted) controller.abort();
    else options.signal.addEventListener('abort', () => controller.abort(), { once: true });
  }
  const summary = run(dirs, { ...options, signal: controller.signal }, (rec) => {
    queue.push(rec);
    if (wake) wake();
  });
  summary.then(
    () => { done = true; if (wake) wake(); },
    (e) => { done = true; failure = e; if (wake) wake(); }
  );
  const iterator = {
    summary,
    async next() {
      for (;;) {
        if (queue.length) return { value: queue.shift(), done: false };
        if (done) {
          if (failure && !controller.signal.aborted) throw failure;
          return { value: undefined, done: true };
        }
        await new Promise((r) => { wake = r; });
        wake = null;
      }
    },
    async return() {
      if (!done) controller.abort();
      summary.catch(() => {});
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  summary.catch(() => {}); // the iterator rethrows; an unread summary is not an unhandled rejection
  return iterator;
}

// The program's version line (`precompress -V`).
function version(options = {}) {
  return new Promise((resolve, reject) => {
    let bin;
    try {
      bin = binaryPath(options);
    } catch (e) {
      reject(e);
      return;
    }
    const child = spawn(bin, ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('error', (e) => reject(new PrecompressError(spawnFailure(bin, e), { code: e.code })));
    child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new PrecompressError(`precompress: --version: exit status ${code}`, { exitCode: code }))));
  });
}

module.exports = {
  precompress, files, version, binaryPath, command, PrecompressError, OptionError, BinaryError,
  default: precompress,
};
