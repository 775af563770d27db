/** What a call threw, for a test to look into; fails the test if the call does not throw. */
export async function thrown(call: Promise<unknown>): Promise<any> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}
