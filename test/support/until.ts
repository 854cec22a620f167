// Waiting helpers shared by suites.

/** Polls `condition` every 20 ms until true. @throws after `timeoutMs` (default 30000). */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadlineAtMs = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadlineAtMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
