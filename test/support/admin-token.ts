// The demo team's admin on a test server's /admin/v1: a personal access token (signed in with the
// README's password), and a GET with it.
import assert from 'node:assert/strict';

/** The demo team's admin (fixtures; the password is written in README.md). */
export const DEMO_ADMIN = { email: 'admin@demo.example', password: 'parley-demo-admin' };

/** A personal access token of a member (the demo team's admin by default); `baseUrl` is the server's `/v1` base URL. */
export async function adminToken(baseUrl: string, who: { email: string; password: string } = DEMO_ADMIN): Promise<string> {
  const origin = new URL(baseUrl).origin;
  const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${origin}/admin/v1${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const signIn = await post('/sessions', who);
  assert.equal(signIn.status, 200);
  const session = (await signIn.json()) as { csrf_token: string };
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const token = await post('/tokens', { name: 'tests' }, { cookie, 'x-csrf-token': session.csrf_token });
  assert.equal(token.status, 200);
  return ((await token.json()) as { token: string }).token;
}

/** GET `/admin/v1<p>` with a token: the status and the JSON body. */
export async function adminGet(baseUrl: string, token: string, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${new URL(baseUrl).origin}/admin/v1${p}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}
