#!/usr/bin/env node
'use strict';
// `precompress` on PATH (npx precompress, npm run scripts): runs the
// platform package's program with this process's arguments and standard
// streams, forwards SIGINT, SIGTERM and SIGHUP to it, and ends as it ended:
// with its exit status, or killed by the same signal.

const { spawn } = require('child_process');
const os = require('os');
const { binaryPath, spawnFailure, BinaryError } = require('../lib/binary.js');

let bin;
try {
  bin = binaryPath();
} catch (e) {
  if (!(e instanceof BinaryError)) throw e;
  process.stderr.write(e.message + '\n');
  process.exit(2);
}

const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });

// A Ctrl-C at a terminal reaches both processes (one process group); the
// program stops the same way on a second one, so forwarding is harmless
// there and needed everywhere else (kill PID, a CI runner's SIGTERM).
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const forward = (signal) => {
  try {
    child.kill(signal);
  } catch (e) {
    // the child is gone already: its exit event ends this process
  }
};
for (const s of forwarded) process.on(s, forward);

child.on('error', (e) => {
  process.stderr.write(spawnFailure(bin, e) + '\n');
  process.exit(2);
});

child.on('exit', (code, signal) => {
  for (const s of forwarded) process.off(s, forward);
  if (signal) {
    // The same death as the child's, so that a shell or CI sees it (a
    // caught SIGINT is exit 130 from the program itself, not this path).
    try {
      process.kill(process.pid, signal);
    } catch (e) {
      // fall through to the shell's convention below
    }
    process.exit(128 + (os.constants.signals[signal] || 0));
  }
  process.exit(code);
});
