/** Where operator keys come from: apart from operator-keys.ts, so that `settle --help` can name them without loading its schemas. */
export const OPERATOR_KEYS_VARIABLE = 'SETTLE_OPERATOR_KEYS';
export const OPERATOR_KEY_VARIABLE = 'SETTLE_OPERATOR_KEY';
