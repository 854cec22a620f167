/**
 * What the embedded stack's banner says to send as `Authorization: Bearer …`
 * (docs/security.md): the dev token; a token of API_TOKENS; a JWT of the OIDC issuer; or
 * either when both are configured.
 */
import type { Config } from '../src/config/index.js';

/** The credential the banner's API line names, and the placeholder its curl example sends. */
export interface CredentialHint {
  /** For the API line, e.g. `token: dev-token, tenant dev`, `a JWT from https://idp…`. */
  line: string;
  /** The bearer credential in the example request: the dev token, or a placeholder. */
  bearer: string;
}

/** The banner's credential hint for a configuration. */
export function credentialHint(
  config: Pick<Config, 'devToken' | 'apiTokens' | 'oidc'>,
): CredentialHint {
  if (config.devToken) return { line: 'token: dev-token, tenant dev', bearer: 'dev-token' };
  const jwt = config.oidc ? `a JWT from ${config.oidc.issuer} (OIDC_ISSUER)` : undefined;
  const token = config.apiTokens.size > 0 ? 'a token from API_TOKENS' : undefined;
  const line = [token, jwt].filter(Boolean).join(', or ');
  return { line, bearer: jwt && !token ? '<a JWT>' : `<${line}>` };
}
