/**
 * The credentials check `npm run api` makes before it serves (docs/security.md): a production
 * API never falls back to the token everyone knows.
 */
import { ConfigError, DEV_TOKEN, type Config } from './index.js';

/**
 * Refuses an API configuration that would accept only the dev token without saying so.
 * @param config from loadConfig: `devToken` is true when neither API_TOKENS nor OIDC_ISSUER is
 *   set; `allowDevToken` is ALLOW_DEV_TOKEN=true
 * @throws ConfigError naming API_TOKENS, with what to set instead
 */
export function requireApiCredentials(config: Pick<Config, 'devToken' | 'allowDevToken'>): void {
  if (config.devToken && !config.allowDevToken) {
    throw new ConfigError(
      'API_TOKENS',
      'is required by `npm run api` when OIDC_ISSUER is unset: set API_TOKENS=tenant:token,… ' +
        'or OIDC_* (docs/security.md); for development only, ALLOW_DEV_TOKEN=true accepts the ' +
        `dev token (${DEV_TOKEN})`,
    );
  }
}
