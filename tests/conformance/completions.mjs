// The completions both conformance targets give (completion-complete scenario): values for the
// arguments of test_prompt_with_arguments and the variable of the resource template.
export function complete({ ref, argument }) {
  const pool =
    ref.type === 'ref/prompt' && ref.name === 'test_prompt_with_arguments'
      ? ['paris', 'park', 'party', 'test', 'testing', 'test-value']
      : ref.type === 'ref/resource'
        ? ['1', '2', '123']
        : [];
  const values = pool.filter((v) => v.startsWith(argument.value ?? ''));
  return { completion: { values, total: values.length, hasMore: false } };
}
