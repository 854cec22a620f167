/**
 * The kubeconfig of one user of the apiserver tier: self-contained (the CA and the bearer token
 * inline, no exec plugin), so @kubernetes/client-node, kubectl and the product's container
 * image can all use it.
 */
import { dumpYaml } from '@kubernetes/client-node';

/** What a tier kubeconfig is made from. */
export interface TierKubeconfigInput {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** User name, also the name of the kubeconfig's cluster/user/context entries' user. */
  user: string;
  token: string;
  /** The context's namespace. */
  namespace: string;
}

/** Renders the kubeconfig (YAML): cluster `apiserver-tier`, the user, context `<user>@apiserver-tier` (current). */
export function renderTierKubeconfig(input: TierKubeconfigInput): string {
  const context = `${input.user}@apiserver-tier`;
  return dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'apiserver-tier',
        cluster: {
          server: input.server,
          'certificate-authority-data': Buffer.from(input.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: input.user, user: { token: input.token } }],
    contexts: [
      {
        name: context,
        context: { cluster: 'apiserver-tier', user: input.user, namespace: input.namespace },
      },
    ],
    'current-context': context,
    preferences: {},
  });
}
