/** The on-call operator of the test run: global-setup provisions their key (SETTLE_OPERATOR_KEY, SETTLE_OPERATOR_KEYS). */
export const TEST_OPERATOR = 'oncall';
