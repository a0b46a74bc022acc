/**
 * Gloo's weight rule: weights not given share what is left of 100 evenly (the first ones take
 * the remainder), so that the result sums to 100 whenever the given weights do not exceed it.
 */
export function fillWeights(items: readonly { readonly weight?: number }[]): number[] {
  const given = items.reduce((sum, t) => sum + (t.weight ?? 0), 0);
  const open = items.filter((t) => t.weight === undefined).length;
  const left = Math.max(0, 100 - given);
  const share = open === 0 ? 0 : Math.floor(left / open);
  let extra = open === 0 ? 0 : left - share * open;
  return items.map((t) => {
    if (t.weight !== undefined) return t.weight;
    const bonus = extra > 0 ? 1 : 0;
    extra -= bonus;
    return share + bonus;
  });
}
