// Puppeteer attached to a running Chromium with no dialog handler, started by
// cdpnb.launch("chromium+puppeteer"): the client in front that leaves dialogs alone,
// beside Playwright's auto-dismisser.
//
//   node puppeteer_attach.mjs NODE_MODULES BROWSER_URL OWNER_PID
//
// puppeteer.connect({browserURL}) auto-attaches to every target, also to pages other
// clients create later; with no 'dialog' listener anywhere Puppeteer leaves a native
// dialog open for whoever answers it. puppeteer-core downloads no browser. It stays
// attached until SIGTERM (it disconnects, never closes the browser, which belongs to
// cdpnb), until the browser goes away, or until OWNER_PID (the Python that launched
// it) is no longer its parent.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, browserURL, ownerPid] = process.argv.slice(2);
const require = createRequire(path.join(nodeModules, 'cdpnb.js'));
const entry = require.resolve('puppeteer-core');
const { version } = JSON.parse(readFileSync(path.join(nodeModules, 'puppeteer-core',
                                                      'package.json'), 'utf8'));
const puppeteer = (await import(pathToFileURL(entry).href)).default;

setInterval(() => {
  if (process.ppid !== Number(ownerPid)) process.exit(0);
}, 1000);

const browser = await puppeteer.connect({ browserURL, defaultViewport: null });
browser.on('disconnected', () => process.exit(0));
// Each target Puppeteer attaches to, in its log: how a test sees that it is really in
// front of the pages another client creates.
browser.on('targetcreated', (target) => {
  process.stdout.write(`cdpnb: puppeteer attached to ${target.type()} ${target.url()}\n`);
});
browser.on('targetchanged', (target) => {
  process.stdout.write(`cdpnb: puppeteer sees ${target.type()} at ${target.url()}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => {
    // disconnect() lets go of the browser without closing it; exit whatever it says.
    browser.disconnect().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  });
}
const pages = await browser.pages();
process.stdout.write(`cdpnb: puppeteer-core ${version} attached to ${browser.wsEndpoint()} ` +
                     `(${await browser.version()}, ${pages.length} page(s))\n`);
