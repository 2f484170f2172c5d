/** `text` with each character as %XX, in upper- or lower-case hex; with `every`, only each `every`-th character: a secret as a client might paste it into a URL. */
export function percentEncoded(text: string, hex: 'upper' | 'lower' = 'upper', every = 1): string {
  return [...text]
    .map((c, i) => {
      if (i % every !== 0) return c;
      const code = c.charCodeAt(0).toString(16).padStart(2, '0');
      return `%${hex === 'upper' ? code.toUpperCase() : code}`;
    })
    .join('');
}
