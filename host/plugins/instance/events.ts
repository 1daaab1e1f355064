// Host events for a plugin that listens: one subscription through the capabilities while it listens
// to any name, dropped when it listens to none, and a rate cap on what is delivered.
// Invariants: events reach only a loaded, running instance and only the names it listens to; at most
// EVENTS_PER_SECOND a second are posted (one warning a second says the rest were dropped); an event
// over maxValueBytes of JSON is not posted.
import type { HostEventName, JsonValue } from '../types.ts';
import { type InstanceState, post } from './state.ts';

/** Events delivered to one plugin per second at most; the rest of that second is dropped. */
export const EVENTS_PER_SECOND = 100;

export function listen(state: InstanceState, name: string, on: boolean): void {
  const { capabilities } = state.options;
  if (on) state.listening.add(name);
  else state.listening.delete(name);
  if (state.listening.size > 0 && state.unsubscribe === undefined && capabilities.subscribe)
    state.unsubscribe = capabilities.subscribe((event, data) => deliverEvent(state, event, data));
  else if (state.listening.size === 0 && state.unsubscribe !== undefined) {
    state.unsubscribe();
    state.unsubscribe = undefined;
  }
}

function deliverEvent(state: InstanceState, name: HostEventName, data: JsonValue): void {
  if (state.ended || !state.loaded || !state.listening.has(name)) return;
  const now = performance.now();
  if (now - state.eventWindow >= 1000) {
    state.eventWindow = now;
    state.eventsInWindow = 0;
  }
  if (++state.eventsInWindow > EVENTS_PER_SECOND) {
    if (state.eventsInWindow === EVENTS_PER_SECOND + 1)
      state.options.log({
        level: 'warn',
        text: `runtime: more than ${EVENTS_PER_SECOND} events in one second; the rest of this second's are dropped`,
      });
    return;
  }
  const dataJson = JSON.stringify(data);
  if (dataJson.length > state.options.limits.maxValueBytes) return;
  state.looseEntryAt = now;
  post(state, { t: 'event', id: state.options.id, name, dataJson });
}
