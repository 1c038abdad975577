// http_bind_localhost.mjs - preload that keeps a Node server on loopback:
// every net.Server.listen() in the process binds 127.0.0.1, whatever the
// program asked for (the reference servers listen on all interfaces).
//   node --import ./http_bind_localhost.mjs server.js
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const callbacks = args.filter((a) => typeof a === 'function');
  if (first === undefined || first === null || typeof first === 'function') {
    args = [0, '127.0.0.1', ...callbacks];
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    args = [Number(first), '127.0.0.1', ...callbacks];
  } else if (typeof first === 'object' && !('fd' in first) && !('path' in first) && !('_handle' in first)) {
    args = [{ ...first, host: '127.0.0.1' }, ...callbacks];
  }
  return listen.apply(this, args);
};
