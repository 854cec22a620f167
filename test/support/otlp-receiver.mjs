// A tiny OTLP/HTTP trace receiver, run as its own process (as a collector would be) so its
// requests never pass through the tested process's HTTP instrumentation. It answers every
// `POST /v1/traces` with 200 (an empty ExportTraceServiceResponse) and sends the body, its
// content type and path to the parent over IPC; it prints nothing else.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import process from 'node:process';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    process.send?.({
      path: req.url,
      contentType: req.headers['content-type'],
      body: Buffer.concat(chunks).toString('base64'),
    });
    res.writeHead(200, { 'Content-Type': req.headers['content-type'] ?? 'application/x-protobuf' });
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('disconnect', () => server.close(() => process.exit(0)));
