/**
 * The rules of "docs that run" (docs/testing.md) as tables: which blocks of a page are examples,
 * how a marker skips one, and how a command's output is compared with what the page shows.
 * test/docs-examples.test.ts runs them against the embedded stack.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { extractExamples } from './support/doc-examples.js';
import { outputMismatch, parseShownJson } from './support/output-match.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('extractExamples', () => {
  it('takes indented and fenced blocks that start with $, commands with their output and continuations', () => {
    const page = [
      'Intro.',
      '',
      '    npm ci && npm start',
      '',
      'Then:',
      '',
      "    $ curl -s localhost:8080/v1/quota -H 'Authorization: Bearer dev-token' \\",
      "        -H 'Accept: application/json'",
      '    {"tenant":"dev",…}',
      '',
      '    $ echo $?',
      '    0',
      '',
      '- a list item:',
      '',
      '      $ npx durable-sandbox templates',
      '      NAME   IMAGE',
      '',
      '  more of the item.',
      '',
      '```console',
      '$ npx durable-sandbox list',
      'ID   STATE',
      '```',
    ].join('\n');
    expect(extractExamples(page, 'page.md')).toEqual([
      {
        file: 'page.md',
        line: 7,
        commands: [
          {
            command:
              "curl -s localhost:8080/v1/quota -H 'Authorization: Bearer dev-token' \\\n" +
              "    -H 'Accept: application/json'",
            expected: ['{"tenant":"dev",…}', ''],
            line: 7,
          },
          { command: 'echo $?', expected: ['0'], line: 11 },
        ],
      },
      {
        file: 'page.md',
        line: 16,
        commands: [
          { command: 'npx durable-sandbox templates', expected: ['NAME   IMAGE'], line: 16 },
        ],
      },
      {
        file: 'page.md',
        line: 22,
        commands: [{ command: 'npx durable-sandbox list', expected: ['ID   STATE'], line: 22 }],
      },
    ]);
  });

  it('marks a block skipped, with its reason, by the comment right before it', () => {
    const page = [
      '<!-- doctest: skip (needs a real cluster) -->',
      '',
      '    $ kubectl get pods',
      '    NAME',
      '',
      '    $ npx durable-sandbox list',
    ].join('\n');
    const examples = extractExamples(page, 'page.md');
    expect(examples.map((e) => [e.line, e.skip])).toEqual([[3, 'needs a real cluster']]);
  });

  it.each([
    ['<!-- doctest: skip -->', /page\.md:1: unknown doctest marker/],
    ['<!-- doctest: skip() -->', /page\.md:1: unknown doctest marker/],
    ['<!-- doctest: run later (x) -->', /page\.md:1: unknown doctest marker/],
  ])('refuses the marker %s (a reason is required)', (marker, error) => {
    expect(() => extractExamples(`${marker}\n\n    $ ls\n`, 'page.md')).toThrow(error);
  });

  it('reads a marker shown inside a code block as code, not as a marker', () => {
    const page = 'Mark it so:\n\n    <!-- doctest: skip (why) -->\n\nThen:\n\n    $ ls\n';
    expect(extractExamples(page, 'page.md').map((e) => e.skip)).toEqual([undefined]);
  });

  it.each(PAGES)('%s: its markers are well formed', (page) => {
    expect(() => extractExamples(readFileSync(join(ROOT, page), 'utf8'), page)).not.toThrow();
  });

  it('refuses a marker that no example follows', () => {
    const page = '<!-- doctest: skip (x) -->\n\nText.\n\n    $ ls\n';
    expect(() => extractExamples(page, 'page.md')).toThrow(/page\.md:1: a doctest marker with no/);
  });
});

describe('outputMismatch', () => {
  const table: Array<[string, string[], string, 'match' | RegExp]> = [
    ['same lines', ['status     failed'], 'status     failed\n', 'match'],
    [
      'whitespace runs are one space',
      ['sbx_…    running   base'],
      'sbx_abc   running  base',
      'match',
    ],
    [
      '… inside a line',
      ['operation  op_… (sandbox.create)'],
      'operation  op_x1 (sandbox.create)',
      'match',
    ],
    [
      'a changed word',
      ['status     failed'],
      'status     succeeded',
      /expected the line "status failed", got "status succeeded"/,
    ],
    [
      'a … line takes any lines',
      ['…', 'status failed'],
      '- op: waiting\n- op: failed\nstatus failed',
      'match',
    ],
    ['a … line takes no line', ['…', 'status failed'], 'status failed', 'match'],
    [
      'more output than shown',
      ['status failed'],
      'status failed\nerror: x',
      /more output than the page shows, from "error: x"/,
    ],
    ['output ends first', ['a', 'b'], 'a', /at the page's line "b": the output ended first/],
    ['a trailing … takes the rest', ['a', '…'], 'a\nb\nc', 'match'],
    ['blank lines and \\r are ignored', ['a', '', 'b'], 'a\r\n\r\nb\r\n', 'match'],
    ['terminal colours are ignored', ['✔ done'], '\u001b[32m✔\u001b[39m done', 'match'],
    [
      'JSON: the fields shown, in any order, wrapped',
      ['{"error":{"code":"quota_exceeded",', '          "details":{"limit":"sandboxes"}}}'],
      '{"error":{"message":"m","details":{"usage":1,"limit":"sandboxes"},"code":"quota_exceeded"}}',
      'match',
    ],
    [
      'JSON: a wrong value',
      ['{"error":{"code":"quota_exceeded"}}'],
      '{"error":{"code":"rate_limited"}}',
      /\$\.error\.code: expected "quota_exceeded", got "rate_limited"/,
    ],
    ['JSON: a missing field', ['{"a":1,"b":2}'], '{"a":1}', /\$\.b: missing/],
    [
      'JSON: … in a string',
      ['{"message":"at … on node sim-node-1",…}'],
      '{"message":"at 2026 on node sim-node-1","x":1}',
      'match',
    ],
    [
      'JSON: … as a value and {…}',
      ['{"id":"whe_…","created_at":…,"sandbox":{…}}'],
      '{"id":"whe_1","created_at":"t","sandbox":{"a":1}}',
      'match',
    ],
    [
      'JSON: arrays are exact unless …',
      ['{"floors":[{"rootfs_mib":451}]}'],
      '{"floors":[{"rootfs_mib":451},{"rootfs_mib":9}]}',
      /\$\.floors: expected 1 elements, got 2/,
    ],
    [
      'JSON: [x, …] allows more',
      ['{"floors":[{"rootfs_mib":451},…]}'],
      '{"floors":[{"rootfs_mib":451},{"rootfs_mib":9}]}',
      'match',
    ],
    [
      'JSON: pretty-printed output',
      ['{"status": "failed", "code": "invalid_request"}'],
      '{\n  "status": "failed",\n  "code": "invalid_request"\n}\n',
      'match',
    ],
    [
      'JSON against a text line',
      ['{"a":1}'],
      'curl: (7) Failed to connect',
      /expected JSON, got the line "curl: \(7\) Failed to connect"/,
    ],
    [
      'an HTTP answer: status line, a header, the body',
      [
        'HTTP/1.1 429 Too Many Requests',
        '…',
        'Retry-After: 30',
        '…',
        '{"error":{"code":"quota_exceeded"}}',
      ],
      'HTTP/1.1 429 Too Many Requests\r\nX-Request-Id: x\r\nRetry-After: 30\r\nContent-Type: application/json\r\n\r\n{"error":{"code":"quota_exceeded"}}',
      'match',
    ],
    [
      'an HTTP answer with another status',
      ['HTTP/1.1 429 Too Many Requests', '…'],
      'HTTP/1.1 415 Unsupported Media Type\r\nX-Request-Id: x',
      /expected the line "HTTP\/1\.1 429 Too Many Requests", got "HTTP\/1\.1 415 Unsupported Media Type"/,
    ],
  ];

  it.each(table)('%s', (_name, shown, output, outcome) => {
    const mismatch = outputMismatch(shown, output);
    if (outcome === 'match') expect(mismatch).toBeUndefined();
    else expect(mismatch).toMatch(outcome);
  });
});

describe('parseShownJson', () => {
  it.each([
    ['{…}', {}],
    ['{"a":1,…}', { a: 1 }],
    ['{…, "a": 1}', { a: 1 }],
    ['{"a":"x … y"}', { a: 'x … y' }],
  ])('reads %s', (text, value) => {
    expect(parseShownJson(text)).toEqual(value);
  });

  it('gives undefined for what is not JSON even with its … read', () => {
    expect(parseShownJson('{"a": }')).toBeUndefined();
  });
});
