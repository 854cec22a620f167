/**
 * Labels and filters in the store (src/store/labels.ts, src/store/sandboxes.ts `selectSandboxPage`,
 * src/store/operations.ts `selectOperationPage`; docs/api.md, "Labels and filters"), on SQLite and,
 * with TEST_DATABASE_URL, PostgreSQL: labels stored with the create and changed in place, every
 * filter of the lists, a selector page equal to Kubernetes' `Matches` over the same sandboxes
 * (a property over generated labels and selectors), pages that stay put while rows are written,
 * and page tokens bound to the filter they were issued for.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  formatLabelSelector,
  parseLabelSelector,
  selectorMatches,
  type LabelRequirement,
} from '../contract/index.js';
import {
  InvalidPageTokenError,
  openStore,
  type ListSandboxesOptions,
  type NewSandboxInput,
  type SandboxRecord,
  type Store,
} from '../src/store/index.js';
import { OTHER_FILTER_TOKEN } from '../src/store/page-token.js';
import { storeBackends, type StoreTarget } from './support/store.js';

const RESOURCES = { cpu: 1, memoryMib: 1024, diskMib: 2048 };
const START_MS = Date.parse('2025-01-01T00:00:00.000Z');

/** A clock that moves one second per reading, so every row has its own created_at. */
function steppingClock(): { clock: () => Date; at: (n: number) => string } {
  let ms = START_MS;
  return {
    clock: () => new Date((ms += 1000)),
    at: (n: number) => new Date(START_MS + n * 1000).toISOString(),
  };
}

function sandboxInput(n: number, overrides: Partial<NewSandboxInput> = {}): NewSandboxInput {
  return {
    id: `sbx_${String(n).padStart(4, '0')}`,
    tenant: 'acme',
    template: 'base',
    resources: RESOURCES,
    operationId: `op_${String(n).padStart(4, '0')}`,
    ...overrides,
  };
}

/** Every page of a list, in order. */
async function allPages(
  store: Store,
  tenant: string,
  options: Omit<ListSandboxesOptions, 'pageToken'>,
): Promise<SandboxRecord[]> {
  const found: SandboxRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await store.listSandboxes(tenant, { ...options, pageToken });
    found.push(...page.sandboxes);
    pageToken = page.nextPageToken;
  } while (pageToken !== undefined);
  return found;
}

const ids = (sandboxes: { id: string }[]) => sandboxes.map((sandbox) => sandbox.id);

describe.each(storeBackends())('labels and filters on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  let at: (n: number) => string;

  beforeEach(async () => {
    target = await backend.freshTarget();
    const clock = steppingClock();
    at = clock.at;
    store = await openStore({ ...target.options, clock: clock.clock });
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });

  async function created(input: NewSandboxInput): Promise<SandboxRecord> {
    const result = await store.createSandbox(input);
    if (result.kind !== 'created') throw new Error(`expected created, got ${result.kind}`);
    return result.sandbox;
  }

  describe('labels on a sandbox', () => {
    it('are stored with the create and read back by get, list and the operation', async () => {
      const labels = { team: 'a', 'example.com/env': 'prod', empty: '' };
      const sandbox = await created(sandboxInput(1, { labels }));

      expect(sandbox.labels).toEqual(labels);
      expect((await store.getSandbox('acme', 'sbx_0001'))?.labels).toEqual(labels);
      expect((await store.listSandboxes('acme', { limit: 10 })).sandboxes[0]?.labels).toEqual(
        labels,
      );
      expect((await store.getOperation('acme', 'op_0001'))?.sandbox?.labels).toEqual(labels);
    });

    it('are {} for a sandbox created without any', async () => {
      expect((await created(sandboxInput(1))).labels).toEqual({});
    });

    it('are replaced whole by an update without keys, and updated_at moves', async () => {
      const before = await created(sandboxInput(1, { labels: { team: 'a', env: 'prod' } }));

      const result = await store.updateLabels('acme', 'sbx_0001', { labels: { owner: 'bob' } });

      expect(result).toMatchObject({ kind: 'updated', sandbox: { labels: { owner: 'bob' } } });
      const after = await store.getSandbox('acme', 'sbx_0001');
      expect(after?.labels).toEqual({ owner: 'bob' });
      expect((after?.updatedAt ?? '') > before.updatedAt).toBe(true);
      expect(
        ids(await allPages(store, 'acme', { limit: 5, selector: parseLabelSelector('team') })),
      ).toEqual([]);
      expect(
        ids(await allPages(store, 'acme', { limit: 5, selector: parseLabelSelector('owner=bob') })),
      ).toEqual(['sbx_0001']);
    });

    it('with keys, sets the keys the labels give and removes the others, keeping the rest', async () => {
      await created(sandboxInput(1, { labels: { team: 'a', env: 'prod', keep: 'x' } }));

      const result = await store.updateLabels('acme', 'sbx_0001', {
        labels: { team: 'b', owner: 'bob' },
        keys: ['team', 'owner', 'env'],
      });

      expect(result).toMatchObject({
        kind: 'updated',
        sandbox: { labels: { team: 'b', owner: 'bob', keep: 'x' } },
      });
      expect(
        ids(await allPages(store, 'acme', { limit: 5, selector: parseLabelSelector('env') })),
      ).toEqual([]);
    });

    it('is idempotent: the same update again changes nothing, not even updated_at', async () => {
      await created(sandboxInput(1));
      const first = await store.updateLabels('acme', 'sbx_0001', { labels: { team: 'a' } });
      const second = await store.updateLabels('acme', 'sbx_0001', { labels: { team: 'a' } });

      expect(first.kind).toBe('updated');
      expect(second).toEqual(first);
    });

    it('refuses an update past 64 labels, writing nothing', async () => {
      const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'v']));
      await created(sandboxInput(1, { labels }));

      const result = await store.updateLabels('acme', 'sbx_0001', {
        labels: { extra: 'v' },
        keys: ['extra'],
      });

      expect(result).toEqual({ kind: 'too_many', count: 65 });
      expect((await store.getSandbox('acme', 'sbx_0001'))?.labels).toEqual(labels);
    });

    it("answers not_found for another tenant's sandbox, and changes nothing", async () => {
      await created(sandboxInput(1, { labels: { team: 'a' } }));

      expect(await store.updateLabels('globex', 'sbx_0001', { labels: {} })).toEqual({
        kind: 'not_found',
      });
      expect((await store.getSandbox('acme', 'sbx_0001'))?.labels).toEqual({ team: 'a' });
    });
  });

  describe('sandbox filters', () => {
    it('filters by several states', async () => {
      await created(sandboxInput(1));
      await created(sandboxInput(2));
      await created(sandboxInput(3));
      await store.markSandboxFailed({ sandboxId: 'sbx_0002', code: 'internal', message: 'x' });
      await store.markSandboxDeleted({ sandboxId: 'sbx_0003' });

      const page = await store.listSandboxes('acme', { limit: 10, states: ['creating', 'failed'] });

      expect(ids(page.sandboxes)).toEqual(['sbx_0002', 'sbx_0001']);
    });

    it('filters by template', async () => {
      await created(sandboxInput(1, { template: 'base' }));
      await created(sandboxInput(2, { template: 'python' }));

      const page = await store.listSandboxes('acme', { limit: 10, template: 'python' });

      expect(ids(page.sandboxes)).toEqual(['sbx_0002']);
    });

    it('filters by creation time: after is inclusive, before exclusive', async () => {
      for (const n of [1, 2, 3, 4]) await created(sandboxInput(n));
      // The clock reads once per create: sandbox n is created at second n.
      const page = await store.listSandboxes('acme', {
        limit: 10,
        createdAfter: at(2),
        createdBefore: at(4),
      });

      expect(ids(page.sandboxes)).toEqual(['sbx_0003', 'sbx_0002']);
    });

    it("never lists another tenant's sandboxes, whatever the selector", async () => {
      await created(sandboxInput(1, { labels: { team: 'a' } }));
      await created(sandboxInput(2, { tenant: 'globex', labels: { team: 'a' } }));

      for (const text of ['team=a', 'team', '!owner', 'team in (a,b)', 'owner!=x']) {
        const page = await store.listSandboxes('acme', {
          limit: 10,
          selector: parseLabelSelector(text),
        });
        expect(ids(page.sandboxes), text).toEqual(['sbx_0001']);
      }
    });

    it('combines the selector with state, template and time (AND)', async () => {
      await created(sandboxInput(1, { labels: { team: 'a' } }));
      await created(sandboxInput(2, { labels: { team: 'a' }, template: 'python' }));
      await created(sandboxInput(3, { labels: { team: 'a' } }));
      await created(sandboxInput(4, { labels: { team: 'b' } }));
      await store.markSandboxDeleted({ sandboxId: 'sbx_0003' });

      const page = await store.listSandboxes('acme', {
        limit: 10,
        selector: parseLabelSelector('team=a'),
        states: ['creating'],
        template: 'base',
        createdAfter: at(1),
      });

      expect(ids(page.sandboxes)).toEqual(['sbx_0001']);
    });
  });

  describe('page tokens', () => {
    beforeEach(async () => {
      for (const n of [1, 2, 3, 4, 5]) {
        await created(sandboxInput(n, { labels: { team: n % 2 ? 'a' : 'b' } }));
      }
    });

    it('continue the filter they were issued for', async () => {
      const selector = parseLabelSelector('team=a');
      const first = await store.listSandboxes('acme', { limit: 2, selector });
      const second = await store.listSandboxes('acme', {
        limit: 2,
        selector: parseLabelSelector('team==a'),
        pageToken: first.nextPageToken,
      });

      expect(ids(first.sandboxes)).toEqual(['sbx_0005', 'sbx_0003']);
      expect(ids(second.sandboxes)).toEqual(['sbx_0001']);
      expect(second.nextPageToken).toBeUndefined();
    });

    it('are refused with another filter, or none, naming why', async () => {
      const first = await store.listSandboxes('acme', {
        limit: 1,
        selector: parseLabelSelector('team=a'),
      });
      const unfiltered = await store.listSandboxes('acme', { limit: 1 });
      const cases: ListSandboxesOptions[] = [
        { limit: 1, selector: parseLabelSelector('team=b'), pageToken: first.nextPageToken },
        { limit: 1, pageToken: first.nextPageToken },
        { limit: 1, states: ['creating'], pageToken: unfiltered.nextPageToken },
        { limit: 1, selector: parseLabelSelector('team=a'), pageToken: unfiltered.nextPageToken },
      ];
      for (const options of cases) {
        const refused = store.listSandboxes('acme', options);
        await expect(refused).rejects.toBeInstanceOf(InvalidPageTokenError);
        await expect(refused).rejects.toThrow(OTHER_FILTER_TOKEN);
      }
    });

    it('of the sandbox list are refused by a filtered operation list', async () => {
      const first = await store.listSandboxes('acme', {
        limit: 1,
        selector: parseLabelSelector('team=a'),
      });

      await expect(
        store.listOperations('acme', {
          limit: 1,
          types: ['sandbox.create'],
          pageToken: first.nextPageToken,
        }),
      ).rejects.toThrow(OTHER_FILTER_TOKEN);
    });

    it('are positions: rows written between pages neither repeat nor skip a row', async () => {
      const selector = parseLabelSelector('team in (a,b)');
      const first = await store.listSandboxes('acme', { limit: 2, selector });
      // Newer sandboxes (before the page's position) and a label change of an older one.
      await created(sandboxInput(6, { labels: { team: 'a' } }));
      await created(sandboxInput(7, { labels: { team: 'b' } }));
      await store.updateLabels('acme', 'sbx_0002', { labels: { team: 'b', extra: 'x' } });
      const rest = await allPagesFrom(first.nextPageToken, selector);

      expect(ids(first.sandboxes)).toEqual(['sbx_0005', 'sbx_0004']);
      expect(ids(rest)).toEqual(['sbx_0003', 'sbx_0002', 'sbx_0001']);
    });

    async function allPagesFrom(pageToken: string | undefined, selector: LabelRequirement[]) {
      const found: SandboxRecord[] = [];
      while (pageToken !== undefined) {
        const page = await store.listSandboxes('acme', { limit: 2, selector, pageToken });
        found.push(...page.sandboxes);
        pageToken = page.nextPageToken;
      }
      return found;
    }
  });

  describe('operation filters', () => {
    beforeEach(async () => {
      await created(sandboxInput(1));
      await created(sandboxInput(2));
      await store.beginDelete({
        id: 'op_0003',
        tenant: 'acme',
        sandboxId: 'sbx_0001',
        cause: 'requested',
      });
      await store.markSandboxFailed({ sandboxId: 'sbx_0002', code: 'internal', message: 'x' });
    });

    const opIds = (page: { operations: { id: string }[] }) => page.operations.map((op) => op.id);

    it('by type, several statuses, sandbox and creation time', async () => {
      expect(
        opIds(await store.listOperations('acme', { limit: 10, types: ['sandbox.delete'] })),
      ).toEqual(['op_0003']);
      expect(
        opIds(await store.listOperations('acme', { limit: 10, statuses: ['failed', 'succeeded'] })),
      ).toEqual(['op_0002']);
      expect(
        opIds(await store.listOperations('acme', { limit: 10, sandboxId: 'sbx_0001' })),
      ).toEqual(['op_0003', 'op_0001']);
      expect(
        opIds(
          await store.listOperations('acme', {
            limit: 10,
            createdAfter: at(2),
            createdBefore: at(3),
          }),
        ),
      ).toEqual(['op_0002']);
    });

    it('pages bound to the filter', async () => {
      const first = await store.listOperations('acme', { limit: 1, sandboxId: 'sbx_0001' });
      const second = await store.listOperations('acme', {
        limit: 1,
        sandboxId: 'sbx_0001',
        pageToken: first.nextPageToken,
      });

      expect([...opIds(first), ...opIds(second)]).toEqual(['op_0003', 'op_0001']);
      await expect(
        store.listOperations('acme', {
          limit: 1,
          sandboxId: 'sbx_0002',
          pageToken: first.nextPageToken,
        }),
      ).rejects.toThrow(OTHER_FILTER_TOKEN);
    });
  });
});

/**
 * The property: for generated labels on 40 sandboxes of two tenants and generated selectors,
 * every page of the store's answer, read 3 at a time, is exactly the tenant's sandboxes that
 * Kubernetes' `Matches` selects (contract/labels.ts), newest first. One database per backend.
 */
describe.each(storeBackends())('a selector page is Kubernetes Matches on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  const sandboxes: { id: string; tenant: string; labels: Record<string, string> }[] = [];

  const KEYS = ['team', 'env', 'gpu', 'example.com/x'];
  const VALUES = ['', 'a', 'b', 'prod', '0', '7', '12', '007'];

  beforeAll(async () => {
    target = await backend.freshTarget();
    store = await openStore({ ...target.options, clock: steppingClock().clock });
    const random = fc.sample(
      fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 4 }),
      { numRuns: 40, seed: 46 },
    );
    for (const [n, labels] of random.entries()) {
      const tenant = n % 4 === 3 ? 'globex' : 'acme';
      const input = sandboxInput(n + 1, { tenant, labels });
      const result = await store.createSandbox(input);
      if (result.kind !== 'created') throw new Error('not created');
      sandboxes.push({ id: input.id, tenant, labels });
    }
  });
  afterAll(async () => {
    await store?.close();
    await target?.dispose();
  });

  const key = fc.constantFrom(...KEYS, 'owner');
  const value = fc.constantFrom(...VALUES, 'c');
  const requirement: fc.Arbitrary<LabelRequirement> = fc.oneof(
    fc.record({
      key,
      operator: fc.constantFrom('=' as const, '==' as const, '!=' as const),
      values: value.map((v) => [v]),
    }),
    fc.record({
      key,
      operator: fc.constantFrom('in' as const, 'notin' as const),
      values: fc.uniqueArray(value, { minLength: 1, maxLength: 3 }).map((v) => [...v].sort()),
    }),
    fc.record({
      key,
      operator: fc.constantFrom('exists' as const, '!' as const),
      values: fc.constant([] as string[]),
    }),
    fc.record({
      key,
      operator: fc.constantFrom('gt' as const, 'lt' as const),
      values: fc.constantFrom('0', '7', '10').map((v) => [v]),
    }),
  );

  it('for any selector', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(requirement, { maxLength: 3 }), async (requirements) => {
        const selector = parseLabelSelector(formatLabelSelector(requirements));
        const expected = sandboxes
          .filter((s) => s.tenant === 'acme' && selectorMatches(selector, s.labels))
          .map((s) => s.id)
          .reverse();
        const found = await allPages(store, 'acme', { limit: 3, selector });
        expect(ids(found), formatLabelSelector(selector)).toEqual(expected);
      }),
      { numRuns: 60, seed: 46 },
    );
  });
});
