/**
 * True while process `pid` of this host exists (one we may not signal counts as existing); how a store's lease
 * knows that a holder on this host was killed, so that its lease binds no longer.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code !== 'ESRCH';
  }
}
