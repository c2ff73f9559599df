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
// - A session's Chromium that dies (killed, crashed) is said to its client: the
//   server keeps the client's WebSocket open and answers nothing more (measured:
//   Chromium SIGKILLed under a session, the pipe's end is only logged by its
//   PipeTransport, node and the socket stay, and a script.evaluate waited its whole
//   20 s budget). So the browser's exit, unless the server closed it (session.end,
//   browser.close, the client gone), closes that client's WebSocket with code 4404
//   (cdpnb.transport.wire.FAR_END_GONE) and a reason naming the browser's pid and how
//   it exited: cdpnb's supervisor takes that as "gone", ends every wait and does not
//   reconnect.
import { AsyncLocalStorage } from 'node:async_hooks';
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

// The launch a spawn belongs to (BrowserInstance.run below), so its browser's exit
// reaches that session's client.
const launching = new AsyncLocalStorage();
const spawn = childProcess.spawn;
childProcess.spawn = function (file, args, options) {
  if (file === browserBin && options) options = { ...options, detached: false };
  const child = spawn.call(this, file, args, options);
  const launch = file === browserBin ? launching.getStore() : undefined;
  if (launch) launch.child = child;
  return child;
};

// What a session's forwarder is handed when its browser died: the server passes it to
// the client's connection.sendUTF, which closes the connection instead. Its text is
// '{}' for the listener that reads the session.new reply (JSON.parse, no id: skipped).
const FAR_END_GONE = 4404;
class BrowserGone {
  constructor(reason) { this.reason = reason; }
  toString() { return '{}'; }
}
const websocket = (await import(pathToFileURL(path.join(nodeModules, 'websocket',
                                                        'index.js')).href)).default;
const sendUTF = websocket.connection.prototype.sendUTF;
websocket.connection.prototype.sendUTF = function (data, cb) {
  if (data instanceof BrowserGone) {
    if (this.connected) this.close(FAR_END_GONE, data.reason);
    return undefined;
  }
  return sendUTF.call(this, data, cb);
};

const { BrowserInstance } = await import(pathToFileURL(path.join(serverDir,
                                                                 'BrowserInstance.js')).href);
const run = BrowserInstance.run;
const closing = new WeakSet();
BrowserInstance.run = function (chromeOptions, verbose) {
  const options = { ...chromeOptions, chromeArgs: [...ourFlags, ...chromeOptions.chromeArgs] };
  const launch = {};
  return launching.run(launch, async () => {
    const instance = await run.call(this, options, verbose);
    watchBrowser(instance, launch.child);
    return instance;
  });
};
const close = BrowserInstance.prototype.close;
BrowserInstance.prototype.close = function (...args) {
  closing.add(this);  // (ended by the server: nothing to tell)
  return close.apply(this, args);
};

function watchBrowser(instance, child) {
  if (!child) return;
  const exited = (code, signal) => {
    if (closing.has(instance)) return;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    instance.bidiSession().emit('message', new BrowserGone(
      `the browser behind chromium-bidi (pid ${child.pid}) exited (${how})`));
  };
  if (child.exitCode !== null || child.signalCode !== null) {
    exited(child.exitCode, child.signalCode);
  } else {
    child.once('exit', exited);
  }
}

// The server reads --port / PORT; ours is chosen at listen() above.
process.argv = process.argv.slice(0, 2);
await import(pathToFileURL(path.join(serverDir, 'index.js')).href);
