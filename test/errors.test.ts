// The error catalogue (src/core/api-errors.ts): every answer that is not a 2xx comes from one table, with
// one body builder, and agrees with the contract (§7's statuses, the error object of D-1).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ERROR_STATUS, ErrorType, ReferenceErrorBody } from '../src/contract/index.ts';
import { ApiError, ERRORS, apiError, errorBody, invalidRequest, isInvalidRequestCode, type ErrorName } from '../src/core/api-errors.ts';

const names = Object.keys(ERRORS) as ErrorName[];

test('every error of the catalogue builds the complete error object, with its status and headers', () => {
  for (const name of names) {
    const err = apiError(name, `message of ${name}`, { param: 'p' });
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, ERRORS[name].status);
    assert.deepEqual(ReferenceErrorBody.parse(err.toBody()), {
      error: { message: `message of ${name}`, type: ERRORS[name].type, param: 'p', code: ERRORS[name].code },
    });
    assert.deepEqual(err.toBody(), errorBody(name, `message of ${name}`, 'p'), 'one builder for thrown errors and raw-socket answers');
    for (const [k, v] of Object.entries(ERRORS[name].headers ?? {})) assert.equal(err.headers[k], v);
  }
});

test('the seven error types of §7 are there, with the status the interface fixes; every other type is invalid_request_error, or D-91 and D-166 service_unavailable (503)', () => {
  for (const type of ErrorType.options) {
    assert.ok(
      names.some((n) => ERRORS[n].type === type),
      `${type} is in the catalogue`,
    );
  }
  for (const name of names) {
    const { type, status } = ERRORS[name];
    if (type === 'invalid_request_error') assert.ok(status >= 400 && status < 500, name);
    else if (type === 'service_unavailable') assert.ok(['store_unavailable', 'sign_in_busy'].includes(name) && status === 503, name);
    else assert.equal(status, ERROR_STATUS[type], name);
  }
  for (const status of [400, 405, 408, 409, 413, 415, 417, 422, 431])
    assert.ok(
      names.some((n) => ERRORS[n].status === status),
      `a ${status} is catalogued`,
    );
});

test("a 400 names only a catalogued code; the codes of the contract's own rules are catalogued", () => {
  assert.equal(invalidRequest('x', null, 'invalid_cursor').status, 400);
  assert.ok(isInvalidRequestCode('invalid_value'));
  assert.ok(!isInvalidRequestCode('body_too_large'), 'a 413 is not a 400');
  assert.ok(!isInvalidRequestCode('toString'));
  const dir = path.resolve(import.meta.dirname, '../src/contract');
  const contract = fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
    .join('\n');
  const codes = [...contract.matchAll(/apiCode: '([a-z_]+)'/g)].map((m) => m[1]!);
  assert.ok(codes.length > 0);
  for (const code of codes) assert.ok(isInvalidRequestCode(code), `${code} (raised by a contract schema) is a catalogued 400`);
});

test('nothing outside the catalogue builds an error object by hand', () => {
  const src = path.resolve(import.meta.dirname, '../src');
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.ts') && full !== path.join(src, 'core/api-errors.ts')) {
        const text = fs.readFileSync(full, 'utf8');
        if (/new ApiError\(|type: 'invalid_request_error'/.test(text)) offenders.push(path.relative(src, full));
      }
    }
  };
  walk(src);
  assert.deepEqual(offenders, []);
});
