// The JavaScript test app: the `http-js` template's fetch handler with one
// route per capability the e2e tests (tests/tests/polyglot.rs) and `compare`
// ask for. Key-value and variables are Spin's WIT interfaces, imported as
// componentize-js imports them (wit/world.wit, named in package.json).
import { Store } from 'fermyon:spin/key-value@2.0.0';
import { get as variable } from 'fermyon:spin/variables@2.0.0';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function text(status, body) {
  return new Response(body, { status, headers: { 'content-type': 'text/plain' } });
}

async function handle(request) {
  const path = new URL(request.url).pathname;
  if (path === '/' || path === '/hello') {
    return text(200, 'Hello, World!');
  }
  if (path === '/kv') {
    // A counter in the `default` store: each request adds one.
    const store = Store.open('default');
    const stored = store.get('count');
    const count = (stored ? Number(decoder.decode(stored)) : 0) + 1;
    store.set('count', encoder.encode(String(count)));
    return text(200, String(count));
  }
  if (path === '/variable') {
    return text(200, variable('greeting'));
  }
  if (path === '/echo' && request.method === 'POST') {
    const contentType = request.headers.get('content-type') ?? 'application/octet-stream';
    const body = await request.arrayBuffer();
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  }
  return text(404, `no route for ${path}`);
}

addEventListener('fetch', (event) => {
  event.respondWith(handle(event.request));
});
