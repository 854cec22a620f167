/**
 * Labels and label selectors (contract/labels.ts; docs/api.md, "Labels and filters"): the keys
 * and values Kubernetes accepts (validation.go `IsQualifiedName`, `IsValidLabelValue`), the
 * selector syntax of selector.go `Parse` with where a malformed one goes wrong, and what each
 * operator selects (`Requirement.Matches`). Tables from Kubernetes' own selector tests, then
 * properties over generated labels and selectors.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  LabelSelectorError,
  MAX_LABELS,
  formatLabelSelector,
  isLabelValue,
  isQualifiedName,
  labelKeyErrors,
  labelValueErrors,
  numericLabelKey,
  parseLabelSelector,
  parseLabels,
  selectorMatches,
  type LabelRequirement,
} from '../contract/labels.js';
import {
  POD_ANNOTATIONS,
  POD_LABELS,
  sandboxPod,
  tenantLabelValue,
  type SandboxPodInput,
} from '../src/kubernetes/pod-spec.js';

/** A sandbox pod's input, for the tenant label's tests. */
const POD: SandboxPodInput = {
  sandboxId: 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa',
  generation: 1,
  template: 'base',
  image: 'busybox',
  resources: { cpu: 1, memoryMib: 256, diskMib: 1024 },
};

/** The error a selector throws, or a failure naming the selector that parsed. */
function selectorError(text: string): LabelSelectorError {
  try {
    parseLabelSelector(text);
  } catch (err) {
    if (err instanceof LabelSelectorError) return err;
    throw err;
  }
  throw new Error(`selector ${JSON.stringify(text)} parsed, expected an error`);
}

describe('label keys (IsQualifiedName)', () => {
  it.each([
    'a',
    'A',
    '1',
    'team',
    'app.kubernetes.io/name',
    'example.com/Team_1',
    'a-b_c.d',
    `${'a'.repeat(253)}/${'b'.repeat(63)}`,
    'x/y',
  ])('accepts %j', (key) => {
    expect(labelKeyErrors(key)).toEqual([]);
  });

  it.each([
    ['', 'name part must be non-empty'],
    ['-a', 'name part must consist of alphanumeric characters'],
    ['a-', 'name part must consist of alphanumeric characters'],
    ['a b', 'name part must consist of alphanumeric characters'],
    ['a'.repeat(64), 'name part must be no more than 63 characters'],
    ['/a', 'prefix part must be non-empty'],
    ['a/', 'name part must be non-empty'],
    ['Example.com/a', 'prefix part a lowercase RFC 1123 subdomain'],
    ['ex_ample.com/a', 'prefix part a lowercase RFC 1123 subdomain'],
    [`${'a'.repeat(254)}/b`, 'prefix part must be no more than 253 characters'],
    ['a/b/c', 'a qualified name must consist of'],
    ['é', 'name part must consist of alphanumeric characters'],
  ])('refuses %j: %s', (key, message) => {
    const errors = labelKeyErrors(key);
    expect(errors.join('; ')).toContain(message);
    expect(isQualifiedName(key)).toBe(false);
  });
});

describe('label values (IsValidLabelValue)', () => {
  it.each(['', 'a', 'A1', 'prod', 'v1.2.3', 'a_b-c.d', 'x'.repeat(63), '007'])(
    'accepts %j',
    (value) => {
      expect(labelValueErrors(value)).toEqual([]);
    },
  );

  it.each([
    ['x'.repeat(64), 'must be no more than 63 characters'],
    ['-a', 'a valid label must be an empty string or consist of'],
    ['a.', 'a valid label must be an empty string or consist of'],
    ['a b', 'a valid label must be an empty string or consist of'],
    ['a/b', 'a valid label must be an empty string or consist of'],
    ['ü', 'a valid label must be an empty string or consist of'],
  ])('refuses %j: %s', (value, message) => {
    expect(labelValueErrors(value).join('; ')).toContain(message);
    expect(isLabelValue(value)).toBe(false);
  });
});

describe('parseLabels (a request\'s "labels")', () => {
  it('accepts a map of valid keys and values, the empty map too', () => {
    expect(parseLabels({ team: 'a', 'example.com/env': '' })).toEqual({
      labels: { team: 'a', 'example.com/env': '' },
    });
    expect(parseLabels({})).toEqual({ labels: {} });
  });

  it('names the label and the rule of a bad key', () => {
    expect(parseLabels({ 'Bad Key': 'x' })).toEqual({
      problems: [
        {
          field: 'labels["Bad Key"]',
          message: expect.stringContaining(
            'key is not a valid label key: name part must consist of alphanumeric characters',
          ),
        },
      ],
    });
  });

  it('names the label and the rule of a bad value, and of a value that is not a string', () => {
    expect(parseLabels({ team: 'a b', n: 3 })).toEqual({
      problems: [
        {
          field: 'labels["team"]',
          message: expect.stringContaining('value "a b" is invalid: a valid label must be'),
        },
        { field: 'labels["n"]', message: expect.stringContaining('value must be a string') },
      ],
    });
  });

  it(`allows ${MAX_LABELS} labels and refuses one more, naming the count and the limit`, () => {
    const labels = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    expect(parseLabels(labels(MAX_LABELS))).toHaveProperty('labels');
    expect(parseLabels(labels(MAX_LABELS + 1))).toEqual({
      problems: [
        {
          field: 'labels',
          message: `has ${MAX_LABELS + 1} labels; a sandbox may carry at most 64`,
        },
      ],
    });
  });

  it('refuses anything but an object', () => {
    for (const value of [null, [], 'team=a', 3]) {
      expect(parseLabels(value)).toEqual({
        problems: [{ field: 'labels', message: expect.stringContaining('must be a JSON object') }],
      });
    }
  });
});

describe('parseLabelSelector (selector.go Parse)', () => {
  const req = (key: string, operator: LabelRequirement['operator'], values: string[] = []) => ({
    key,
    operator,
    values,
  });

  // Kubernetes' TestSelectorParse and TestToString cases, and the grammar's examples.
  it.each<[string, LabelRequirement[]]>([
    ['', []],
    ['   ', []],
    ['x=a,y=b,z=c', [req('x', '=', ['a']), req('y', '=', ['b']), req('z', '=', ['c'])]],
    ['x!=a,y=b', [req('x', '!=', ['a']), req('y', '=', ['b'])]],
    ['x=,z= ', [req('x', '=', ['']), req('z', '=', [''])]],
    ['x= ,z= ', [req('x', '=', ['']), req('z', '=', [''])]],
    ['!x', [req('x', '!')]],
    ['x', [req('x', 'exists')]],
    ['x==a', [req('x', '==', ['a'])]],
    ['x>1', [req('x', 'gt', ['1'])]],
    ['x>1,z<5', [req('x', 'gt', ['1']), req('z', 'lt', ['5'])]],
    ['x in (), y', [req('x', 'in', ['']), req('y', 'exists')]],
    [
      'x in (foo,,baz),y,z notin ()',
      [req('x', 'in', ['', 'baz', 'foo']), req('y', 'exists'), req('z', 'notin', [''])],
    ],
    ['team=a,env in (prod,dev)', [req('env', 'in', ['dev', 'prod']), req('team', '=', ['a'])]],
    ['env in (prod, dev ,prod)', [req('env', 'in', ['dev', 'prod'])]],
    ['in in (in,notin)', [req('in', 'in', ['in', 'notin'])]],
    ['notin notin (x)', [req('notin', 'notin', ['x'])]],
    ['!in', [req('in', '!')]],
    ['example.com/team=a', [req('example.com/team', '=', ['a'])]],
    ['x in (a,)', [req('x', 'in', ['', 'a'])]],
    ['\tx\n=\ra', [req('x', '=', ['a'])]],
  ])('%j', (text, expected) => {
    expect(parseLabelSelector(text)).toEqual(expected);
  });

  // Kubernetes' invalid cases, each with where it goes wrong (1-based).
  it.each<[string, string, number]>([
    ['x=a||y=b', 'value "a||y" of key "x" is invalid', 3],
    ['x==a==b', "found '==', expected: ',' or 'end of string'", 5],
    ['!x=a', "found '=', expected: ',' or 'end of string'", 3],
    ['x<a', "for 'Gt', 'Lt' operators, the value must be an integer", 3],
    ['x>', "for 'Gt', 'Lt' operators, the value must be an integer", 3],
    ['x>-1', 'value "-1" of key "x" is invalid', 3],
    ['x>99999999999999999999', "for 'Gt', 'Lt' operators, the value must be an integer", 3],
    ['x in (a', "found 'end of string', expected: ',' or ')'", 8],
    ['x in a', "found 'a' expected: '('", 6],
    ['x in (a b)', "found 'b', expected: ',' or ')'", 9],
    ['x in (,,)', "found ')', expected: ',', or identifier", 9],
    ['x in (=)', "found '=', expected: ',', ')' or identifier", 7],
    ['x notin', "found 'end of string' expected: '('", 8],
    ['x y', "found 'y', expected: in, notin, =, ==, !=, gt, lt", 3],
    ['x,', "found 'end of string', expected: identifier after ','", 3],
    [',x', "found ',', expected: !, identifier, or 'end of string'", 1],
    ['x,,y', "found ',', expected: identifier after ','", 3],
    ['!', "found 'end of string', expected: identifier", 2],
    ['!=a', "found '!=', expected: !, identifier, or 'end of string'", 1],
    ['Bad Key=a', "found 'Key', expected: in, notin, =, ==, !=, gt, lt", 5],
    ['Bad_=a', 'key "Bad_" is invalid: name part must consist of', 1],
    ['team=a b', "found 'b', expected: ',' or 'end of string'", 8],
    ['team=a,env in (prod,-dev)', 'value "-dev" of key "env" is invalid', 21],
    ['-team', 'key "-team" is invalid: name part must consist of', 1],
    ['team=a/b', 'value "a/b" of key "team" is invalid', 6],
  ])('refuses %j: %s, at character %i', (text, message, position) => {
    const error = selectorError(text);
    expect(error.reason).toContain(message);
    expect(error.position).toBe(position);
    expect(error.message).toContain(`at character ${position}`);
  });
});

describe('selectorMatches (Requirement.Matches)', () => {
  const matches = (selector: string, labels: Record<string, string>) =>
    selectorMatches(parseLabelSelector(selector), labels);

  it('= and == need the key with that value; the empty value is a value', () => {
    expect(matches('team=a', { team: 'a' })).toBe(true);
    expect(matches('team==a', { team: 'a' })).toBe(true);
    expect(matches('team=a', { team: 'b' })).toBe(false);
    expect(matches('team=a', {})).toBe(false);
    expect(matches('team=', { team: '' })).toBe(true);
    expect(matches('team=', {})).toBe(false);
  });

  it('!= and notin also select a sandbox without the key', () => {
    expect(matches('team!=a', {})).toBe(true);
    expect(matches('team!=a', { team: 'b' })).toBe(true);
    expect(matches('team!=a', { team: 'a' })).toBe(false);
    expect(matches('env notin (prod,dev)', {})).toBe(true);
    expect(matches('env notin (prod,dev)', { env: 'dev' })).toBe(false);
    expect(matches('env notin (prod,dev)', { env: 'qa' })).toBe(true);
  });

  it('in needs the key with one of the values', () => {
    expect(matches('env in (prod,dev)', { env: 'dev' })).toBe(true);
    expect(matches('env in (prod,dev)', { env: 'qa' })).toBe(false);
    expect(matches('env in (prod,dev)', {})).toBe(false);
  });

  it('key and !key test the key alone', () => {
    expect(matches('team', { team: '' })).toBe(true);
    expect(matches('team', {})).toBe(false);
    expect(matches('!team', {})).toBe(true);
    expect(matches('!team', { team: 'a' })).toBe(false);
  });

  it('> and < compare int64 values; any other value never matches', () => {
    expect(matches('gpu>1', { gpu: '2' })).toBe(true);
    expect(matches('gpu>1', { gpu: '1' })).toBe(false);
    expect(matches('gpu>1', { gpu: '007' })).toBe(true);
    expect(matches('gpu<10', { gpu: '9' })).toBe(true);
    expect(matches('gpu<10', { gpu: 'nine' })).toBe(false);
    expect(matches('gpu<10', {})).toBe(false);
    expect(matches('gpu>1', { gpu: '99999999999999999999' })).toBe(false);
  });

  it('the requirements are ANDed; the empty selector matches everything', () => {
    expect(matches('team=a,env in (prod,dev)', { team: 'a', env: 'prod' })).toBe(true);
    expect(matches('team=a,env in (prod,dev)', { team: 'a', env: 'qa' })).toBe(false);
    expect(matches('', {})).toBe(true);
  });
});

describe('numericLabelKey (the stored form of values gt and lt compare)', () => {
  it('pads int64 values to 19 digits so text order is numeric order', () => {
    expect(numericLabelKey('7')).toBe('0000000000000000007');
    expect(numericLabelKey('007')).toBe('0000000000000000007');
    expect(numericLabelKey('9223372036854775807')).toBe('9223372036854775807');
    expect(numericLabelKey('9223372036854775808')).toBeUndefined();
    expect(numericLabelKey('7a')).toBeUndefined();
    expect(numericLabelKey('')).toBeUndefined();
  });
});

// Generators of valid keys, values and selectors.
const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const middle = fc.constantFrom(...'abcXYZ019-_.');
const namePart = fc
  .tuple(alnum, fc.array(middle, { maxLength: 8 }), alnum, fc.boolean())
  .map(([a, mid, b, short]) => (short ? a : `${a}${mid.join('')}${b}`));
const labelValue = fc.oneof(fc.constant(''), namePart, fc.constantFrom('0', '7', '42', '0099'));
const labelKey = fc.oneof(
  namePart,
  fc.constantFrom('in', 'notin', 'team', 'env'),
  namePart.map((name) => `example.com/${name}`),
);
const labelsArb = fc.dictionary(
  fc.constantFrom('team', 'env', 'in', 'gpu', 'example.com/x'),
  labelValue,
  {
    maxKeys: 5,
  },
);
const requirementArb: fc.Arbitrary<LabelRequirement> = fc.oneof(
  fc.record({
    key: labelKey,
    operator: fc.constantFrom('=' as const, '==' as const, '!=' as const),
    values: labelValue.map((v) => [v]),
  }),
  fc.record({
    key: labelKey,
    operator: fc.constantFrom('in' as const, 'notin' as const),
    values: fc
      .uniqueArray(labelValue, { minLength: 1, maxLength: 4 })
      .map((values) => [...values].sort()),
  }),
  fc.record({
    key: labelKey,
    operator: fc.constantFrom('exists' as const, '!' as const),
    values: fc.constant([] as string[]),
  }),
  fc.record({
    key: labelKey,
    operator: fc.constantFrom('gt' as const, 'lt' as const),
    values: fc.constantFrom('0', '5', '42').map((v) => [v]),
  }),
);

describe('selector properties', () => {
  it('format then parse gives the same requirements (String() is a fixed point of Parse)', () => {
    fc.assert(
      fc.property(fc.array(requirementArb, { maxLength: 5 }), (requirements) => {
        const parsed = parseLabelSelector(formatLabelSelector(requirements));
        expect(parseLabelSelector(formatLabelSelector(parsed))).toEqual(parsed);
        expect(parsed).toHaveLength(requirements.length);
        expect(parsed.map((r) => r.key)).toEqual(requirements.map((r) => r.key).sort());
      }),
      { numRuns: 300 },
    );
  });

  it('a selector matches exactly when each of its requirements does, whatever the order', () => {
    fc.assert(
      fc.property(fc.array(requirementArb, { maxLength: 4 }), labelsArb, (requirements, labels) => {
        const whole = parseLabelSelector(formatLabelSelector(requirements));
        const each = requirements.every((r) =>
          selectorMatches(parseLabelSelector(formatLabelSelector([r])), labels),
        );
        expect(selectorMatches(whole, labels)).toBe(each);
        const reversed = parseLabelSelector(formatLabelSelector([...requirements].reverse()));
        expect(selectorMatches(reversed, labels)).toBe(each);
      }),
      { numRuns: 300 },
    );
  });

  it('!= is the negation of =, notin of in, !key of key', () => {
    fc.assert(
      fc.property(
        labelKey,
        fc.uniqueArray(labelValue, { minLength: 1, maxLength: 3 }),
        labelsArb,
        (key, values, labels) => {
          const m = (text: string) => selectorMatches(parseLabelSelector(text), labels);
          expect(m(`${key}!=${values[0]}`)).toBe(!m(`${key}=${values[0]}`));
          expect(m(`${key} notin (${values.join(',')})`)).toBe(
            !m(`${key} in (${values.join(',')})`),
          );
          expect(m(`!${key}`)).toBe(!m(key));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('any text parses or throws a LabelSelectorError with a position inside it (or just after)', () => {
    const alphabet = fc.constantFrom(...'ab =!(),<>-_./ \tinot19'.split(''), 'in', 'notin', '\0');
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 24 }).map((parts) => parts.join('')),
        (text) => {
          try {
            const parsed = parseLabelSelector(text);
            // Whatever parses formats to a selector that parses to the same requirements.
            expect(parseLabelSelector(formatLabelSelector(parsed))).toEqual(parsed);
          } catch (err) {
            expect(err).toBeInstanceOf(LabelSelectorError);
            const { position } = err as LabelSelectorError;
            expect(position).toBeGreaterThanOrEqual(1);
            expect(position).toBeLessThanOrEqual(text.length + 1);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('every generated key and value is valid, and parseLabels keeps them as given', () => {
    fc.assert(
      fc.property(fc.dictionary(labelKey, labelValue, { maxKeys: 10 }), (labels) => {
        expect(parseLabels(labels)).toEqual({ labels });
      }),
      { numRuns: 300 },
    );
  });
});

describe("the pod's tenant label (src/kubernetes/pod-spec.ts tenantLabelValue)", () => {
  it('is the tenant itself when it is a valid label value, with no annotation', () => {
    const pod = sandboxPod({ ...POD, tenant: 'payments' });
    expect(pod.metadata?.labels?.[POD_LABELS.tenant]).toBe('payments');
    expect(pod.metadata?.annotations).not.toHaveProperty(POD_ANNOTATIONS.tenant);
  });

  it('is a readable prefix and a hash otherwise, the tenant as it is in the annotation', () => {
    const pod = sandboxPod({ ...POD, tenant: 'alice@example.com' });
    const value = pod.metadata?.labels?.[POD_LABELS.tenant] ?? '';
    expect(value).toMatch(/^alice-example\.com-h[0-9a-f]{32}$/);
    expect(isLabelValue(value)).toBe(true);
    expect(pod.metadata?.annotations?.[POD_ANNOTATIONS.tenant]).toBe('alice@example.com');
    expect(tenantLabelValue('@@@')).toMatch(/^h[0-9a-f]{32}$/);
    expect(tenantLabelValue('x'.repeat(64))).toMatch(/^x{28}-h[0-9a-f]{32}$/);
  });

  it('cannot be taken by a tenant named after another tenant’s hash', () => {
    const hashed = tenantLabelValue('alice@example.com');
    expect(tenantLabelValue(hashed)).not.toBe(hashed);
    expect(tenantLabelValue(hashed)).toMatch(/-h[0-9a-f]{32}$/);
  });

  it('is a valid label value for any tenant, and two tenants never share one', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 80 }), { minLength: 2, maxLength: 8 }),
        (tenants) => {
          const values = tenants.map(tenantLabelValue);
          for (const value of values) expect(isLabelValue(value) && value !== '').toBe(true);
          expect(new Set(values).size).toBe(tenants.length);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("a pod has no label but the service's: managed-by, sandbox id, tenant", () => {
    const pod = sandboxPod({ ...POD, tenant: 'payments' });
    expect(Object.keys(pod.metadata?.labels ?? {}).sort()).toEqual(
      [POD_LABELS.managedBy, POD_LABELS.sandboxId, POD_LABELS.tenant].sort(),
    );
  });
});
