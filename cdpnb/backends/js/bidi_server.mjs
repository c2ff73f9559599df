// cdpnb's wrapper around chromium-bidi's WebSocket server (the BiDi mapper over
// Chromium), started by cdpnb.launch("chromium+bidi").
//
//   node bidi_server.mjs NODE_MODULES WORKDIR OWNER_PID CHROMIUM_FLAGS_JSON
//
// with BROWSER_BIN naming the Chromium binary. What it changes in the server, and why
// (chromium-bidi 17.0.2, measured):
// - The server calls http.Server.listen(port) with no host, so it listens on every
//   interface, and has no option for a host: listen() is wrapped to bind 127.0.0.1,
//   on a port the kernel chooses; the line "cdpnb: chromium-bidi listening on
//   ws://127.0.0.1:PORT/session" on stderr says which.
// - Each WebSocket connection's session.new launches a Chromium of its own (through
//   @puppeteer/browsers, over --remote-debugging-pipe), which the connection's close
//   ends. Our flags go first in its command line (a client's goog:chromeOptions.args
//   follow): headless, --no-sandbox (root), no background networking.
// - @puppeteer/browsers spawns the browser `detached`, in a session of its own, out of
//   reach of cdpnb's process-group reaper: spawn() is wrapped to keep it in ours.
// - Its per-session profile is a mkdtemp() in os.tmpdir(), which the server never
//   removes: os.tmpdir() is pointed at cdpnb's work dir, removed when the backend ends.
// - SIGTERM makes @puppeteer/browsers close the browser but leaves node running: the
//   signal ends node here, and node's exit handler kills the browser.
// - If OWNER_PID (the Python that launched it) is no longer the parent, node exits
//   (a second guard beside cdpnb's reaper).
import childProcess from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, workdir, ownerPid, flagsJson] = process.argv.slice(2);
const browserBin = process.env.BROWSER_BIN;
const ourFlags = JSON.parse(flagsJson);
const serverDir = path.join(nodeModules, 'chromium-bidi', 'out', 'Default', 'gen', 'src',
                            'bidiServer');

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => process.exit(0));
}
setInterval(() => {
  if (process.ppid !== Number(ownerPid)) process.exit(0);
}, 1000);

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  const callback = args.find((a) => typeof a === 'function');
  this.once('listening', () => {
    const { port } = this.address();
    process.stderr.write(`cdpnb: chromium-bidi listening on ws://127.0.0.1:${port}/session\n`);
  });
  return listen.call(this, 0, '127.0.0.1', callback);
};

os.tmpdir = () => workdir;

const spawn = childProcess.spawn;
childProcess.spawn = function (file, args, options) {
  if (file === browserBin && options) options = { ...options, detached: false };
  return spawn.call(this, file, args, options);
};

const { BrowserInstance } = await import(pathToFileURL(path.join(serverDir,
                                                                 'BrowserInstance.js')).href);
const run = BrowserInstance.run;
BrowserInstance.run = function (chromeOptions, verbose) {
  const options = { ...chromeOptions, chromeArgs: [...ourFlags, ...chromeOptions.chromeArgs] };
  return run.call(this, options, verbose);
};

// The server reads --port / PORT; ours is chosen at listen() above.
process.argv = process.argv.slice(0, 2);
await import(pathToFileURL(path.join(serverDir, 'index.js')).href);
