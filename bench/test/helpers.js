'use strict';
// Test helpers: start the emulator as a child process on random ports,
// make HTTP requests.

const { spawn } = require('node:child_process');
const path = require('node:path');
const http = require('node:http');

const MAIN = path.join(__dirname, '..', 'emulator', 'main.js');

// Start `main.js args` with --base-port/--events-base-port/--replay-base-port
// chosen at random; resolves {proc, basePort, eventsPort, replayPort, stop}.
async function startEmulator(args, engines) {
  const n = engines || 1;
  for (let attempt = 0; attempt < 5; attempt++) {
    const base = 30000 + Math.floor(Math.random() * 9000) * 3;
    const basePort = base;
    const eventsPort = base + 100;
    const replayPort = base + 200;
    const all = ['--engines', String(n), '--base-port', String(basePort),
      '--events-base-port', String(eventsPort), '--replay-base-port', String(replayPort)].concat(args || []);
    const proc = spawn(process.execPath, [MAIN, ...all], { stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stdin.on('error', () => {});
    let stderr = '';
    let out = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    const ok = await new Promise((resolve) => {
      proc.stdout.on('data', (d) => {
        out += d;
        if (out.includes('ready\n')) resolve(true);
      });
      proc.on('exit', () => resolve(false));
    });
    if (ok) {
      const stop = () => new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        proc.on('exit', (code) => resolve(code));
        proc.kill('SIGTERM');
      });
      // command(line): one line to the emulator's stdin; stdout(): all it printed
      return { proc, basePort, eventsPort, replayPort, stop, stderr: () => stderr,
        stdout: () => out, command: (line) => proc.stdin.write(line + '\n') };
    }
    if (!/EADDRINUSE|Address already in use/.test(stderr)) {
      throw new Error('emulator did not start: ' + stderr);
    }
  }
  throw new Error('emulator did not start: no free ports found');
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// One HTTP request (extra: more request headers); resolves {status,
// headers, body (string)}.
function request(port, method, urlPath, body, extra) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null
      : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, agent,
      headers: Object.assign(data ? { 'content-type': 'application/json',
        'content-length': data.length } : {}, extra || {}) },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

async function postJson(port, urlPath, body, extra) {
  const r = await request(port, 'POST', urlPath, body, extra);
  let json = null;
  try { json = JSON.parse(r.body); } catch (e) { /* stream or error */ }
  return Object.assign(r, { json });
}

// SSE body -> list of data payloads (strings)
function sseData(body) {
  const out = [];
  for (const ev of body.split('\n\n')) {
    if (ev.trim() === '') continue;
    assertSse(ev);
    out.push(ev.slice('data: '.length));
  }
  return out;
}

function assertSse(ev) {
  if (!ev.startsWith('data: ')) throw new Error('SSE event without "data: ": ' + JSON.stringify(ev));
}

module.exports = { startEmulator, request, postJson, sseData, agent };
