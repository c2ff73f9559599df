// An ordinary puppeteer-core script, run unmodified against a browser, a cdpnb proxy in
// front of one, or a cdpnb replay (tests/test_proxy_puppeteer.py).
//
//   node tests/clients/puppeteer_script.mjs ENDPOINT PAGE_URL POPUP_URL
//
// ENDPOINT: http://HOST:PORT (CDP, puppeteer.connect({browserURL})) or, with
// PPTR_PROTOCOL=webDriverBiDi, ws://HOST:PORT/session (puppeteer.connect({browserWSEndpoint,
// protocol: 'webDriverBiDi'})). PAGE_URL: a page with a cross-site iframe whose URL holds
// "/pptr-child". POPUP_URL: the page window.open opens.
//
// Environment: PPTR_ANSWER (the prompt's answer, default "Ada"), PPTR_DIALOG_DELAY_MS (how
// long the dialog handler waits before it accepts, default 0), PPTR_POPUP ("0" skips the
// popup), PPTR_TIMEOUT_MS (puppeteer's timeouts, default 60000).
//
// Prints one JSON line of what it saw (nothing time- or random-dependent); exits 1 after
// printing {"error": ...} when a step failed.
import puppeteer from 'puppeteer-core';

const [endpoint, pageUrl, popupUrl] = process.argv.slice(2);
const protocol = process.env.PPTR_PROTOCOL || 'cdp';
const answer = process.env.PPTR_ANSWER ?? 'Ada';
const dialogDelayMs = Number(process.env.PPTR_DIALOG_DELAY_MS || 0);
const withPopup = (process.env.PPTR_POPUP ?? '1') !== '0';
const timeout = Number(process.env.PPTR_TIMEOUT_MS || 60000);

const results = {protocol};
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function errorText(error) {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

async function main() {
  const browser = protocol === 'webDriverBiDi'
    ? await puppeteer.connect({browserWSEndpoint: endpoint, protocol: 'webDriverBiDi',
                               defaultViewport: null, protocolTimeout: timeout})
    : await puppeteer.connect({browserURL: endpoint, defaultViewport: null,
                               protocolTimeout: timeout});
  results.connected = true;
  const opened = [];
  try {
    const page = await browser.newPage();
    opened.push(page);
    page.setDefaultTimeout(timeout);

    // The script's own dialog handler: accept with the answer (after a pause, if asked).
    const dialogs = [];
    const handled = [];
    page.on('dialog', dialog => {
      const seen = {type: dialog.type(), message: dialog.message(),
                    defaultValue: dialog.defaultValue()};
      dialogs.push(seen);
      handled.push((async () => {
        if (dialogDelayMs > 0) {
          await sleep(dialogDelayMs);
        }
        try {
          await dialog.accept(answer);
          seen.accept = 'ok';
        } catch (error) {
          seen.accept = errorText(error);
        }
      })());
    });

    const response = await page.goto(pageUrl, {waitUntil: 'load'});
    results.status = response ? response.status() : null;
    results.url = page.url();
    // (page.title() runs in Puppeteer's isolated world: over BiDi a sandbox it names
    // __puppeteer_internal_<Math.random()>, so a BiDi replay must match loosely.)
    results.title = await page.title();
    results.evaluated = await page.evaluate(
      () => `${document.title}:${6 * 7}:${document.querySelectorAll('iframe').length}`);

    const frame = page.frames().find(f => f.url().includes('/pptr-child'));
    if (!frame) {
      throw new Error(`no /pptr-child frame among ${page.frames().map(f => f.url())}`);
    }
    results.frames = page.frames().map(f => f.url()).sort();
    results.iframeUrl = frame.url();
    results.iframeOrigin = await frame.evaluate(() => location.origin);

    // A prompt in the cross-site iframe, answered by the handler above.
    results.promptReturned = await frame.evaluate(() => {
      window.got = prompt('Your name?', 'nobody');
      return window.got;
    });
    await Promise.all(handled);
    results.dialogs = dialogs;
    results.iframeGot = await frame.evaluate(() => window.got);

    if (withPopup) {
      const popped = new Promise(resolve => page.once('popup', resolve));
      await page.evaluate(url => {
        window.open(url);
      }, popupUrl);
      const popup = await popped;
      opened.push(popup);
      await popup.waitForFunction(
        url => location.href === url && document.readyState === 'complete',
        {timeout}, popupUrl);
      results.popupUrl = popup.url();
      results.popupTitle = await popup.evaluate(() => document.title);
    }
  } finally {
    // The pages it opened are closed; the browser is not (disconnect).
    for (const page of opened.reverse()) {
      try {
        await page.close();
      } catch (error) {
        results.closeError = errorText(error);
      }
    }
    await browser.disconnect();
  }
}

try {
  await main();
  process.stdout.write(JSON.stringify(results) + '\n');
} catch (error) {
  results.error = errorText(error);
  process.stdout.write(JSON.stringify(results) + '\n');
  process.exitCode = 1;
}
// Nothing may keep node alive past the script (a timer of a failed step).
setTimeout(() => process.exit(), 100).unref();
