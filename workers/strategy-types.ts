/**
 * Input and result types of the expected value and risk profile of an
 * option-only structure (the conventions they follow are in strategy-ev.ts).
 */
